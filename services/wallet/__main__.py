"""`python -m services.wallet worker -l info`"""

from services.infra.private_topics import run_worker
from services.infra.settings import get_settings
from services.wallet import app as wallet

if __name__ == "__main__":
    settings = get_settings()
    run_worker(wallet.build_app(settings), settings, extra=(wallet.COMMANDS_TOPIC,))
