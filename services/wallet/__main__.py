"""`python -m services.wallet worker -l info`"""

from services.infra.private_topics import run_worker
from services.wallet.app import COMMANDS_TOPIC, app, settings

if __name__ == "__main__":
    run_worker(app, settings, extra=(COMMANDS_TOPIC,))
