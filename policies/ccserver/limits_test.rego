package ccserver_test

import data.ccserver

test_limits_calls_per_minute_is_a_positive_whole_number if {
	n := ccserver.limits.calls_per_minute
	is_number(n)
	n == round(n)
	n > 0
}
