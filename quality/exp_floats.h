// e^x of many floats at once, bit for bit what the scalar std::exp(float) returns here.
//
// The forward pass takes one exp per visible key of every query and head (softmax) and one per
// FFN unit of every row (SiLU): called one at a time, the calls and their loops were about a tenth
// of a perplexity run (perf, 1024 tokens, one thread).
// Here the same computation runs 8 floats a vector, as glibc's expf (2.28 on, the algorithm of
// Arm's optimized-routines, which musl shares) does it on an x86-64 core with FMA, the only kind
// this library is built for (quality/CMakeLists.txt): in double,
//   k = round(x 32 / ln 2) (by adding 1.5 2^52), r = x 32 / ln 2 - k (one fma),
//   e^x = 2^(k / 32) 2^(r / 32) ~ T[k mod 32] 2^(k div 32) (C0 r^3 + C1 r^2 + C2 r + 1)
// with glibc's coefficients, the table of 2^(i / 32) rounded to double, and the fma's glibc's FMA
// build takes; rounded to float once. Every operation is exactly rounded IEEE arithmetic, so a lane
// gives the bits the scalar call gives (tests/quality/exp_floats_test.cpp checks every 101st float
// below 88 in magnitude and the edges). Inputs of magnitude 88 or more, infinities and NaN, which
// glibc sends down its overflow and underflow paths, are passed to std::exp itself.
#pragma once

#include <cstdint>

namespace metronome::quality {

// y[i] = e^x[i] for i < n; y may be x.
void exp_floats(const float* x, float* y, int64_t n);

// The same computation on one float, written out in scalar code (what the vector lanes are
// compared with in the tests).
float exp_float(float x);

}  // namespace metronome::quality
