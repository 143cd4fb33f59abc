"""`python -m services.game_evaluation worker -l info`"""

from services.game_evaluation.bootstrap import bootstrap
from services.infra.private_topics import run_worker
from services.infra.settings import get_settings

if __name__ == "__main__":
    settings = get_settings()
    run_worker(bootstrap(settings).app, settings)
