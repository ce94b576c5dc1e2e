#include "optim/optimizer_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"

namespace dt::optim {

using core::Error;
using core::ErrorCode;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum class Kind { kNumber, kInt, kBool, kString, kIntList };

// One hyper-parameter a config may carry: its type and, for numbers and
// integers, the accepted interval (open or closed at each end).
struct Spec {
  const char* key;
  Kind kind;
  double lo = -kInf;
  double hi = kInf;
  bool lo_open = false;
  bool hi_open = false;
};

const char* value_kind_name(const ParamValue& value) {
  switch (value.index()) {
    case 0: return "a boolean";
    case 1: return "an integer";
    case 2: return "a number";
    case 3: return "a string";
    default: return "a list of integers";
  }
}

// A constant table of specs; plain arrays, so nothing here needs destroying at exit.
struct SpecList {
  const Spec* first;
  size_t count;
  const Spec* begin() const { return first; }
  const Spec* end() const { return first + count; }
};

template <size_t N>
constexpr SpecList list_of(const Spec (&specs)[N]) {
  return {specs, N};
}

constexpr Spec kCommonSpecs[] = {
    {"learning_rate", Kind::kNumber, 0.0, kInf},
    {"wd", Kind::kNumber, 0.0, kInf},
    {"rescale_grad", Kind::kNumber, 0.0, kInf, true},
    {"clip_gradient", Kind::kNumber},
    {"multi_precision", Kind::kBool},
    {"lr_scheduler", Kind::kString},
    {"warmup_steps", Kind::kInt, 0.0, kInf},
    {"warmup_begin_lr", Kind::kNumber, 0.0, kInf},
};
constexpr Spec kSgdSpecs[] = {
    {"momentum", Kind::kNumber, 0.0, 1.0, false, true},
    {"nesterov", Kind::kBool},
};
constexpr Spec kNagSpecs[] = {
    {"momentum", Kind::kNumber, 0.0, 1.0, false, true},
};
constexpr Spec kAdamSpecs[] = {
    {"beta1", Kind::kNumber, 0.0, 1.0, false, true},
    {"beta2", Kind::kNumber, 0.0, 1.0, false, true},
    {"epsilon", Kind::kNumber, 0.0, kInf, true},
};
constexpr Spec kFactorSpecs[] = {
    {"step", Kind::kInt, 1.0, kInf},
    {"factor", Kind::kNumber, 0.0, 1.0, true, false},
    {"stop_factor_lr", Kind::kNumber, 0.0, kInf},
};
constexpr Spec kMultiFactorSpecs[] = {
    {"steps", Kind::kIntList},
    {"factor", Kind::kNumber, 0.0, 1.0, true, false},
};
constexpr Spec kCosineSpecs[] = {
    {"max_update", Kind::kInt, 1.0, kInf},
    {"final_lr", Kind::kNumber, 0.0, kInf},
};
constexpr Spec kPolySpecs[] = {
    {"max_update", Kind::kInt, 1.0, kInf},
    {"final_lr", Kind::kNumber, 0.0, kInf},
    {"power", Kind::kNumber, 0.0, kInf, true},
};

// The keys each optimizer adds to the common ones; false for an unknown name.
bool optimizer_specs(const std::string& name, SpecList* out) {
  if (name == "sgd") *out = list_of(kSgdSpecs);
  else if (name == "nag") *out = list_of(kNagSpecs);
  else if (name == "adam" || name == "adamw") *out = list_of(kAdamSpecs);
  else return false;
  return true;
}

constexpr const char* kSchedulers[] = {"none", "factor", "multifactor", "cosine", "poly"};

// The keys each lr_scheduler adds; false for an unknown name.
bool scheduler_specs(const std::string& name, SpecList* out) {
  if (name == "none") *out = {nullptr, 0};
  else if (name == "factor") *out = list_of(kFactorSpecs);
  else if (name == "multifactor") *out = list_of(kMultiFactorSpecs);
  else if (name == "cosine") *out = list_of(kCosineSpecs);
  else if (name == "poly") *out = list_of(kPolySpecs);
  else return false;
  return true;
}

const Spec* find_spec(SpecList specs, const std::string& key) {
  for (const Spec& spec : specs) {
    if (key == spec.key) return &spec;
  }
  return nullptr;
}

std::string format_number(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

std::string interval_text(const Spec& spec) {
  const std::string lo = spec.lo == -kInf ? "-inf" : format_number(spec.lo);
  const std::string hi = spec.hi == kInf ? "inf" : format_number(spec.hi);
  return std::string(spec.lo_open || spec.lo == -kInf ? "(" : "[") + lo + ", " + hi +
         (spec.hi_open || spec.hi == kInf ? ")" : "]");
}

bool in_interval(double v, const Spec& spec) {
  if (spec.lo_open ? !(v > spec.lo) : !(v >= spec.lo)) return false;
  if (spec.hi_open ? !(v < spec.hi) : !(v <= spec.hi)) return false;
  return true;
}

[[noreturn]] void invalid(const std::string& optimizer, const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "optimizer '" + optimizer + "': " + message);
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

OptimizerConfig& OptimizerConfig::set(const std::string& key, double value) {
  params_[key] = value;
  return *this;
}
OptimizerConfig& OptimizerConfig::set(const std::string& key, int64_t value) {
  params_[key] = value;
  return *this;
}
OptimizerConfig& OptimizerConfig::set(const std::string& key, bool value) {
  params_[key] = value;
  return *this;
}
OptimizerConfig& OptimizerConfig::set(const std::string& key, std::string value) {
  params_[key] = std::move(value);
  return *this;
}
OptimizerConfig& OptimizerConfig::set(const std::string& key, std::vector<int64_t> value) {
  params_[key] = std::move(value);
  return *this;
}

const ParamValue* OptimizerConfig::find(const std::string& key) const {
  const auto it = params_.find(key);
  return it == params_.end() ? nullptr : &it->second;
}

double OptimizerConfig::get_number(const std::string& key, double fallback) const {
  const ParamValue* value = find(key);
  if (value == nullptr) return fallback;
  if (const auto* d = std::get_if<double>(value)) return *d;
  if (const auto* i = std::get_if<int64_t>(value)) return static_cast<double>(*i);
  invalid(name_, "'" + key + "' must be a number, not " + value_kind_name(*value));
}

int64_t OptimizerConfig::get_int(const std::string& key, int64_t fallback) const {
  const ParamValue* value = find(key);
  if (value == nullptr) return fallback;
  if (const auto* i = std::get_if<int64_t>(value)) return *i;
  invalid(name_, "'" + key + "' must be an integer, not " + value_kind_name(*value));
}

bool OptimizerConfig::get_bool(const std::string& key, bool fallback) const {
  const ParamValue* value = find(key);
  if (value == nullptr) return fallback;
  if (const auto* b = std::get_if<bool>(value)) return *b;
  invalid(name_, "'" + key + "' must be a boolean, not " + value_kind_name(*value));
}

std::string OptimizerConfig::get_string(const std::string& key, const std::string& fallback) const {
  const ParamValue* value = find(key);
  if (value == nullptr) return fallback;
  if (const auto* s = std::get_if<std::string>(value)) return *s;
  invalid(name_, "'" + key + "' must be a string, not " + value_kind_name(*value));
}

std::vector<int64_t> OptimizerConfig::get_int_list(const std::string& key,
                                                   const std::vector<int64_t>& fallback) const {
  const ParamValue* value = find(key);
  if (value == nullptr) return fallback;
  if (const auto* list = std::get_if<std::vector<int64_t>>(value)) return *list;
  invalid(name_, "'" + key + "' must be a list of integers, not " + value_kind_name(*value));
}

void OptimizerConfig::validate() const { check(/*whole=*/true); }

void OptimizerConfig::validate_entries() const { check(/*whole=*/false); }

void OptimizerConfig::check(bool whole) const {
  SpecList own;
  if (!optimizer_specs(name_, &own)) {
    throw Error(ErrorCode::kInvalidArgument,
                "unknown optimizer '" + name_ + "'; known: sgd, nag, adam, adamw");
  }
  const std::string scheduler = get_string("lr_scheduler", "none");
  SpecList schedule;
  if (!scheduler_specs(scheduler, &schedule)) {
    invalid(name_, "unknown lr_scheduler '" + scheduler + "'; known: none, factor, multifactor, cosine, poly");
  }
  const SpecList common = list_of(kCommonSpecs);

  for (const auto& entry : params_) {
    const std::string& key = entry.first;
    const Spec* spec = find_spec(common, key);
    if (spec == nullptr) spec = find_spec(own, key);
    if (spec == nullptr) spec = find_spec(schedule, key);
    if (spec == nullptr) {
      for (const char* other : kSchedulers) {
        SpecList specs;
        scheduler_specs(other, &specs);
        const Spec* other_spec = find_spec(specs, key);
        if (other_spec != nullptr && !whole) {
          // Setting a schedule's keys before naming the schedule is fine
          // while the description is being built.
          spec = other_spec;
          break;
        }
        if (other_spec != nullptr) {
          invalid(name_, "'" + key + "' is a parameter of lr_scheduler '" + other + "', not of lr_scheduler '" +
                             scheduler + "'");
        }
      }
    }
    if (spec == nullptr) {
      std::vector<std::string> known;
      for (SpecList specs : {common, own, schedule}) {
        for (const Spec& s : specs) known.emplace_back(s.key);
      }
      invalid(name_, "unknown hyper-parameter '" + key + "'; known: " + join_names(known));
    }
    double number = 0.0;
    switch (spec->kind) {
      case Kind::kNumber: number = get_number(key, 0.0); break;
      case Kind::kInt: number = static_cast<double>(get_int(key, 0)); break;
      case Kind::kBool: get_bool(key, false); continue;
      case Kind::kString: get_string(key, ""); continue;
      case Kind::kIntList: get_int_list(key, {}); continue;
    }
    if (!std::isfinite(number)) invalid(name_, "'" + key + "' must be finite, not " + format_number(number));
    if (!in_interval(number, *spec)) {
      invalid(name_, "'" + key + "' = " + format_number(number) + " is outside " + interval_text(*spec));
    }
  }

  if (!whole) return;
  // Constraints that span keys, or that a per-key interval cannot say.
  const auto require_key = [&](const char* key) {
    if (!has(key)) invalid(name_, "lr_scheduler '" + scheduler + "' needs '" + key + "'");
  };
  if (scheduler == "factor") require_key("step");
  if (scheduler == "multifactor") {
    require_key("steps");
    const std::vector<int64_t> steps = get_int_list("steps", {});
    if (steps.empty()) invalid(name_, "'steps' must not be empty");
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i] < 1) invalid(name_, "'steps' must be >= 1, found " + std::to_string(steps[i]));
      if (i > 0 && steps[i] <= steps[i - 1]) {
        invalid(name_, "'steps' must be strictly increasing, found " + std::to_string(steps[i - 1]) + " then " +
                           std::to_string(steps[i]));
      }
    }
  }
  if (scheduler == "cosine" || scheduler == "poly") {
    require_key("max_update");
    const int64_t warmup = get_int("warmup_steps", 0);
    const int64_t max_update = get_int("max_update", 0);
    if (max_update <= warmup) {
      invalid(name_, "'max_update' = " + std::to_string(max_update) + " must exceed 'warmup_steps' = " +
                         std::to_string(warmup));
    }
  }
}

std::string OptimizerConfig::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  out["optimizer"] = name_;
  for (const auto& [key, value] : params_) {
    std::visit([&, key = key](const auto& v) { out[key] = v; }, value);
  }
  return out.dump();
}

OptimizerConfig OptimizerConfig::from_json(const std::string& text) {
  nlohmann::json in;
  try {
    in = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("optimizer config is not valid JSON: ") + e.what());
  }
  if (!in.is_object()) throw Error(ErrorCode::kInvalidArgument, "optimizer config must be a JSON object");
  const auto name = in.find("optimizer");
  if (name == in.end() || !name->is_string()) {
    throw Error(ErrorCode::kInvalidArgument, "optimizer config needs an \"optimizer\" name string");
  }
  OptimizerConfig config(name->get<std::string>());
  const auto to_int64 = [&](const nlohmann::json& v, const std::string& key) -> int64_t {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      invalid(config.name_, "'" + key + "' does not fit in a 64-bit integer");
    }
    return v.get<int64_t>();
  };
  for (const auto& [key, v] : in.items()) {
    if (key == "optimizer") continue;
    if (v.is_boolean()) {
      config.set(key, v.get<bool>());
    } else if (v.is_number_integer()) {
      config.set(key, to_int64(v, key));
    } else if (v.is_number_float()) {
      config.set(key, v.get<double>());
    } else if (v.is_string()) {
      config.set(key, v.get<std::string>());
    } else if (v.is_array() && std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_number_integer(); })) {
      std::vector<int64_t> list;
      for (const auto& e : v) list.push_back(to_int64(e, key));
      config.set(key, std::move(list));
    } else {
      invalid(config.name_, "'" + key + "' holds " + std::string(v.type_name()) +
                                ", which is not a boolean, number, string or list of integers");
    }
  }
  config.validate();
  return config;
}

}  // namespace dt::optim
