// e^x of many doubles at once, bit for bit what the scalar std::exp(double) returns here.
//
// A perplexity run takes one exp per vocabulary entry of every scored token (the log-softmax's sum,
// in double: 49152 a token for SmolLM2), one glibc call at a time, about as long as attention.
// Here the same computation runs 4 doubles a vector, as glibc's exp (2.28 on, the algorithm of
// Arm's optimized-routines) does it in its FMA build on x86-64:
//   k = round(x 128 / ln 2) (by adding 1.5 2^52 in the fma), r = x - k ln 2 / 128 (two fma's,
//   ln 2 / 128 in a high and a low part), e^x = 2^(k / 128) e^r with
//   2^(k / 128) ~ H[k mod 128] (1 + T[k mod 128]) 2^(k div 128) and
//   e^r - 1 ~ r + C2 r^2 + C3 r^3 + C4 r^4 + C5 r^5, evaluated as glibc's source writes it with
//   the fma's its FMA build takes; result = s + s (T + poly) in one fma, s = H 2^(k div 128).
// H is 2^(i / 128) rounded to double and T the remainder relative to it, computed here in
// __float128 (113 bits) by Newton's method (glibc's table is the same numbers: the tests compare
// with std::exp on millions of inputs, which reach every entry). Every operation is exactly rounded
// IEEE arithmetic, so a lane gives the scalar call's bits. Inputs glibc sends to its special cases
// (|x| < 2^-54, zero included, and |x| >= 512, infinities and NaN) are passed to std::exp itself.
#pragma once

#include <cstdint>

namespace metronome::quality {

// y[i] = e^x[i] for i < n; y may be x.
void exp_doubles(const double* x, double* y, int64_t n);

// The same computation on one double, written out in scalar code (what the vector lanes are
// compared with in the tests).
double exp_double(double x);

}  // namespace metronome::quality
