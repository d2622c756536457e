#include "sim/output/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/rng.h"
#include "base/time.h"
#include "sim/engine/frame_ledger.h"

namespace metronome {

TEST(LatencyHistogram, PercentilesWithinBinWidthOfExact) {
  LatencyHistogram h;
  Rng rng(3, "latency");
  std::vector<double> xs;
  for (int i = 0; i < 50000; ++i) {
    const double x = 0.001 * std::exp(3.0 * rng.uniform());  // 1 ms .. 20 ms, skewed
    xs.push_back(x);
    h.add(x);
  }
  std::sort(xs.begin(), xs.end());
  for (double p : {0.5, 0.95, 0.99}) {
    const double exact = xs[static_cast<size_t>(std::ceil(p * xs.size())) - 1];
    EXPECT_NEAR(h.percentile(p) / exact, 1.0, 0.012) << "p=" << p;
  }
}

TEST(LatencyHistogram, CensoredFramesPushPercentilesToInfinity) {
  LatencyHistogram h;
  h.add(0.01, 90);
  h.add_censored(10);
  EXPECT_TRUE(std::isfinite(h.percentile(0.90)));
  EXPECT_TRUE(std::isinf(h.percentile(0.95)));
  EXPECT_EQ(h.total(), 100);
  EXPECT_EQ(LatencyHistogram().percentile(0.5), 0.0);
}

TEST(LatencyHistogram, ExtremesLandInEndBins) {
  EXPECT_EQ(LatencyHistogram::bin_of(0.0), 0);
  EXPECT_EQ(LatencyHistogram::bin_of(-1.0), 0);
  EXPECT_EQ(LatencyHistogram::bin_of(1e30), LatencyHistogram::kBins - 1);
  EXPECT_EQ(LatencyHistogram::bin_of(std::nan("")), 0);
}

// bin_of reads the bin from the double's bits; here it is derived again with frexp: the exponent
// and the first kSubBits binary digits of the mantissa.
TEST(LatencyHistogram, BinOfMatchesExponentAndMantissaDigits) {
  auto reference = [](double x) {
    int e = 0;
    const double m = std::frexp(x, &e);  // x = m 2^e, m in [0.5, 1)
    const int exp = e - 1;               // x = (2m) 2^exp, 2m in [1, 2)
    const int sub = static_cast<int>(std::floor((2 * m - 1) * (1 << LatencyHistogram::kSubBits)));
    return ((exp - LatencyHistogram::kMinExp) << LatencyHistogram::kSubBits) + sub;
  };
  int checked = 0;
  for (double x = std::ldexp(1.0, LatencyHistogram::kMinExp);
       x < std::ldexp(1.0, LatencyHistogram::kMaxExp); x *= 1.0037) {
    for (const double y : {x, std::nextafter(x, 0.0), std::nextafter(x, 1e300)}) {
      if (y < std::ldexp(1.0, LatencyHistogram::kMinExp)) continue;
      ASSERT_EQ(LatencyHistogram::bin_of(y), reference(y)) << y;
      ++checked;
    }
  }
  EXPECT_GT(checked, 30000);
  // Every bin's centre falls in that bin.
  for (int b = 0; b < LatencyHistogram::kBins; b += 7) {
    EXPECT_EQ(LatencyHistogram::bin_of(LatencyHistogram::centre_of(b)), b);
  }
}

// The ledger bins a latency in nanoseconds with one integer test in place of bin_of's two range
// tests: the same bin for every Time, the extremes and each power of two's neighbours included.
TEST(LatencyHistogram, LedgerBinsNanosecondsAsBinOfSeconds) {
  auto expect_same = [](Time t) {
    ASSERT_EQ(FrameLedger::latency_bin(t), LatencyHistogram::bin_of(to_seconds(t))) << t;
  };
  for (Time t : {std::numeric_limits<Time>::min(), Time{-1}, Time{0}, Time{1}, Time{2},
                 std::numeric_limits<Time>::max()}) {
    expect_same(t);
  }
  for (int k = 0; k < 63; ++k) {
    const Time p = Time{1} << k;
    for (Time d = -3; d <= 3; ++d) expect_same(p + d);
  }
  Rng rng(7, "latency bins");
  for (int i = 0; i < 100000; ++i) {
    expect_same(static_cast<Time>(std::ldexp(rng.uniform(), static_cast<int>(rng.uniform() * 62))));
  }
}

// A descending run of adds (the usual ring's frames of one step) leaves the histogram as the
// same adds one by one would: counts, range and the quantiles read from them, into a histogram
// that held others already and into an empty one.
TEST(LatencyHistogram, DescendingRunEqualsSingleAdds) {
  Rng rng(11, "descending");
  for (int trial = 0; trial < 200; ++trial) {
    LatencyHistogram one, run;
    const int before = static_cast<int>(rng.uniform() * 4);
    for (int i = 0; i < before; ++i) {
      const int b = static_cast<int>(rng.uniform() * LatencyHistogram::kBins);
      one.add_bin(b);
      run.add_bin(b);
    }
    std::vector<int> bins(1 + static_cast<size_t>(rng.uniform() * 50));
    for (int& b : bins) b = static_cast<int>(rng.uniform() * LatencyHistogram::kBins);
    std::sort(bins.rbegin(), bins.rend());
    for (int b : bins) one.add_bin(b);
    {
      LatencyHistogram::Descending d(run, bins.front());
      for (int b : bins) d.add_bin(b);
    }
    ASSERT_TRUE(one == run) << "trial " << trial;
    EXPECT_EQ(one.percentile(0.5), run.percentile(0.5));
  }
}

}  // namespace metronome
