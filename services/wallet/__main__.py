"""`python -m services.wallet worker -l info`"""

from services.infra.private_topics import run_worker
from services.infra.settings import get_settings
from services.wallet.bootstrap import bootstrap

if __name__ == "__main__":
    settings = get_settings()
    wallet = bootstrap(settings)
    run_worker(wallet.app, settings, extra=(wallet.commands_topic_name,))
