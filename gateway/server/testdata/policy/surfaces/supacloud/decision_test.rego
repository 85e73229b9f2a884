package supacloud_test

import data.supacloud

test_allow if supacloud.allow == true
