package ccserver_test

import data.ccserver

test_allow if ccserver.decision.allow
