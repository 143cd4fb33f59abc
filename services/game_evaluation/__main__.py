"""`python -m croupier.services.game_evaluation worker -l info`"""

from croupier.services.game_evaluation.app import build_app
from croupier.services.infra.private_topics import run_worker
from croupier.services.infra.settings import get_settings

if __name__ == "__main__":
    settings = get_settings()
    run_worker(build_app(settings), settings)
