package failing

test_always_fails if {
	1 == 2
}
