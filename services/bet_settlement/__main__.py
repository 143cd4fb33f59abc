"""`python -m services.bet_settlement worker -l info`"""

from services.bet_settlement.app import app, settings
from services.infra.private_topics import run_worker

if __name__ == "__main__":
    run_worker(app, settings)
