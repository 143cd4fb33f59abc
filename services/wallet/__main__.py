"""`python -m croupier.services.wallet worker -l info`"""

from croupier.services.infra.private_topics import run_worker
from croupier.services.infra.settings import get_settings
from croupier.services.wallet import app as wallet

if __name__ == "__main__":
    settings = get_settings()
    app = wallet.build_app(settings)
    run_worker(app, settings, extra=(wallet.COMMANDS_TOPIC,))
