"""`python -m services.wallet worker -l info`"""

from services.wallet.app import COMMANDS_TOPIC, app, settings
from services.wallet.private_topic import ensure_private_topics

if __name__ == "__main__":
    ensure_private_topics(app, settings, extra=(COMMANDS_TOPIC,))
    app.main()
