#pragma once
// Numerics that must match numpy / Python exactly, because nnU-Net's plans depend on them.
#include <cstdint>
#include <vector>

namespace medseg {

// numpy.percentile(values, q) with the default 'linear' method; q in [0, 100]. Sorts a copy.
double percentile(std::vector<double> values, double q);
// Several percentiles from one sort.
std::vector<double> percentiles(std::vector<double> values, const std::vector<double>& qs);
// Percentile of already-sorted values.
double percentile_sorted(const std::vector<double>& sorted, double q);
// numpy.median (mean of the two middle values for even counts).
double median(std::vector<double> values);
// Python 3 round(): round half to even.
double round_half_even(double x);
int64_t round_half_even_int(double x);
// numpy's sum of a float32 array (np.add.reduce without dtype): pairwise summation in float32, 8
// partial sums unrolled over blocks of up to 128 values, halves split at multiples of 8 (numpy's
// pairwise_sum). nnU-Net's z-score mean and std are float32 sums of this kind.
float numpy_sum_f32(const float* a, int64_t n);
// numpy's float64 -> float16 cast (npy_double_to_half): the nearest IEEE half value, ties to even,
// rounded once from the double (a cast through float can round twice), as a float. Values from 65520
// on become infinity, as in numpy; NaN stays NaN.
float round_to_half(double x);

}  // namespace medseg
