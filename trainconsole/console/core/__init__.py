"""The console's pure core: run states, metric histories, the leaderboard, weight histograms, the view.

No Textual here (and no torch): every module is unit-tested directly, and the widgets only render what
these build.
"""
