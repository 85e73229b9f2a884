package system.log

# arguments opts argument values into the decision log: per tool name, or
# "*" for every tool, the top-level arguments whose values may be logged.
# Only arguments the policy reads are in a decision's input at all (today
# script.run's slug). Empty, the default: no argument value is logged, and
# replaying the log decides as if they were absent. For example:
#
#   arguments := {"script.run": ["slug"]}
#
# A value that is or holds a credential is masked even when opted in.
arguments := {}
