// Latency percentiles in bounded memory, whatever the horizon. Bins are log-spaced: each power of
// two is split into 2^kSubBits bins (about 1.1% wide at kSubBits = 6), read straight from the bits
// of a double, so adding a sample costs no logarithm. Frames that never got output before the end
// of the run are counted as censored: a percentile that falls among them is +infinity, not a
// made-up number.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace metronome {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr int kMinExp = -30;  // 2^-30 s ~ 1 ns: anything smaller lands in bin 0
  static constexpr int kMaxExp = 34;   // 2^34 s ~ 544 years: the longest horizon fits
  static constexpr int kBins = (kMaxExp - kMinExp) << kSubBits;

  void add(double seconds, int64_t n = 1) { add_bin(bin_of(seconds), n); }
  void add_bin(int bin, int64_t n = 1) {
    bins_[bin] += n;
    count_ += n;
    // Branches, not selects: past its first frames an interval's range rarely grows.
    if (bin < lo_) [[unlikely]]
      lo_ = bin;
    if (bin > hi_) [[unlikely]]
      hi_ = bin;
  }
  // add_bin for bins that never ascend, from `first` on: the range is widened once, for the run,
  // by the Descending's end (nothing may read the histogram before then).
  class Descending {
   public:
    Descending(LatencyHistogram& h, int first) : h_(h), first_(first), last_(first) {}
    ~Descending() {
      if (h_.hi_ < first_) h_.hi_ = first_;
      if (h_.lo_ > last_) h_.lo_ = last_;
    }
    void add_bin(int bin) {
      ++h_.bins_[bin];
      ++h_.count_;
      last_ = bin;
    }

   private:
    LatencyHistogram& h_;
    int first_, last_;
  };
  void add_censored(int64_t n) { censored_ += n; }
  // Merging and clearing touch only the bins in use, so per-interval histograms stay cheap.
  void merge(const LatencyHistogram& o) {
    for (int i = o.lo_; i <= o.hi_; ++i) bins_[i] += o.bins_[i];
    count_ += o.count_;
    censored_ += o.censored_;
    if (o.lo_ <= o.hi_) {
      lo_ = o.lo_ < lo_ ? o.lo_ : lo_;
      hi_ = o.hi_ > hi_ ? o.hi_ : hi_;
    }
  }
  void clear() {
    for (int i = lo_; i <= hi_; ++i) bins_[i] = 0;
    count_ = censored_ = 0;
    lo_ = kBins;
    hi_ = -1;
  }

  bool operator==(const LatencyHistogram&) const = default;  // the same adds, in any order

  int64_t count() const { return count_; }
  int64_t censored() const { return censored_; }
  int64_t total() const { return count_ + censored_; }

  // p in [0, 1]. Returns the geometric centre of the bin holding the p-quantile of all frames
  // (observed and censored); +inf when it lies among the censored; 0 when there are no frames at
  // all.
  double percentile(double p) const {
    const int64_t n = total();
    if (n == 0) return 0.0;
    int64_t rank = static_cast<int64_t>(std::ceil(p * static_cast<double>(n)));
    if (rank < 1) rank = 1;
    if (rank > count_) return std::numeric_limits<double>::infinity();
    int64_t seen = 0;
    for (int i = lo_; i <= hi_; ++i) {
      seen += bins_[i];
      if (seen >= rank) return centre_of(i);
    }
    return centre_of(kBins - 1);
  }

  // For outputs: NaN when there are no frames at all (a percentile of nothing is undefined, not 0;
  // JSON writes it as null). percentile() keeps 0 there for the admission controller's signal.
  double output_percentile(double p) const {
    return total() == 0 ? std::numeric_limits<double>::quiet_NaN() : percentile(p);
  }

  static constexpr double kLowest = 1.0 / (1LL << -kMinExp);
  static constexpr double kHighest = static_cast<double>(1LL << kMaxExp);
  static int bin_of(double seconds) {
    if (!(seconds >= kLowest)) return 0;
    if (seconds >= kHighest) return kBins - 1;
    return bin_in_range(seconds);
  }
  // bin_of for kLowest <= seconds < kHighest.
  static int bin_in_range(double seconds) {
    // A positive double's biased exponent and its top kSubBits mantissa bits are adjacent, so
    // they read as one number: (exponent + 1023) << kSubBits | sub.
    uint64_t bits;
    std::memcpy(&bits, &seconds, sizeof bits);
    return static_cast<int>(bits >> (52 - kSubBits)) - ((1023 + kMinExp) << kSubBits);
  }
  static double centre_of(int bin) {
    const int exp = (bin >> kSubBits) + kMinExp;
    const double sub = bin & ((1 << kSubBits) - 1);
    const double lo = std::ldexp(1.0 + sub / (1 << kSubBits), exp);
    const double hi = std::ldexp(1.0 + (sub + 1) / (1 << kSubBits), exp);
    return std::sqrt(lo * hi);
  }

 private:
  std::array<int64_t, kBins> bins_{};
  int64_t count_ = 0;
  int64_t censored_ = 0;
  int lo_ = kBins, hi_ = -1;  // range of bins in use
};

}  // namespace metronome
