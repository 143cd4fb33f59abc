"""The end-to-end benchmarks (`benchmarks/bench_e2e.py`, `benchmarks/bench_seamless.py`):
one concept per module.

pipe      the baseline: a raw 4-hop aiokafka consume→produce pipe on the same broker
platform  a private broker, the topic catalogue and the four services as processes
tables    a table driven through dealer-event's HTTP API with signed inputs
players   players through the wallet's HTTP API (accounts, deposits, tokens, bets)
load      sustained intake (closed loop) and latency at a fixed offered rate (open loop)
watch     tails the platform's topics to see each round's decisions, settlements, credits
rounds    one round of N bets, from opening to its last credit
cpu       utime+stime of the service processes from /proc
records   the largest record on every topic of the broker
replay    timed `croupier replay` of a round
lifetime  a player's per-bet cost after many lifetime bets (the wallet's pure handlers)
stats     percentiles
report    targets, ratios, the printout and the JSON
runner    the order of the phases, and cleaning up whatever happens
seamless  the seamless wallet's intake beside the transfer wallet's, as ratios (issue 20)
cli       the command line both share
"""
