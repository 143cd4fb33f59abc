"""`python -m services.dealer_event worker -l info`"""

from services.dealer_event.app import app
from services.infra.private_topics import run_worker
from services.infra.settings import get_settings

if __name__ == "__main__":
    run_worker(app, get_settings())
