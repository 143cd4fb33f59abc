"""Developer tooling that writes files kept in the repository (not part of a running
platform, and left out of the built wheel): the Grafana dashboards as code."""
