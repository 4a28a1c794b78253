"""stub"""
NAME="validate"
HELP="x"
DESCRIPTION="x"
def configure(p): pass
def run(a): return 0
