"""stub"""
NAME="diff-live"
HELP="x"
DESCRIPTION="x"
def configure(p): pass
def run(a): return 0
