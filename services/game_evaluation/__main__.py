"""`python -m croupier.services.game_evaluation worker -l info`"""

from croupier.services.game_evaluation.bootstrap import bootstrap
from croupier.services.infra.private_topics import run_worker
from croupier.services.infra.settings import get_settings

if __name__ == "__main__":
    settings = get_settings()
    run_worker(bootstrap(settings).app, settings)
