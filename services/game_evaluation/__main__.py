"""`python -m services.game_evaluation worker -l info`"""

from services.game_evaluation.app import app

if __name__ == "__main__":
    app.main()
