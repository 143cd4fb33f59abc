"""`python -m services.dealer_event worker -l info`"""

from services.dealer_event.bootstrap import bootstrap
from services.infra.private_topics import run_worker
from services.infra.settings import get_settings

if __name__ == "__main__":
    settings = get_settings()
    run_worker(bootstrap(settings).app, settings)
