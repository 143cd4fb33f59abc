"""`python -m services.bet_settlement worker -l info`"""

from services.bet_settlement.app import app, settings
from services.wallet.private_topic import ensure_private_topics

if __name__ == "__main__":
    ensure_private_topics(app, settings)
    app.main()
