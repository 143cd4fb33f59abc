"""`python -m services.dealer_event worker -l info`"""

from services.dealer_event.app import app

if __name__ == "__main__":
    app.main()
