package main

import (
	"math"
	"slices"
	"time"
)

// percentile is the nearest-rank p-quantile (0 < p ≤ 1) of sorted, an
// ascending slice: the smallest value with at least p of the values at or
// below it. It is 0 for an empty slice.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// median is the median of vs (the mean of the two middle values for an even
// count), 0 for none. vs is not modified.
func median[T ~int64 | ~float64](vs []T) T {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
