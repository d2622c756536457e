#include "sim/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim/rng.h"

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

}  // namespace metronome
