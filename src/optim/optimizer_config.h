// OptimizerConfig: the declarative description of an optimizer and its
// learning-rate schedule, a name plus typed hyper-parameters. It is data, not
// code, so the same description travels as JSON text to parameter servers
// (update_on_kvstore) and into checkpoints, and is validated wherever it lands.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace dt::optim {

// One hyper-parameter value. The list type exists for the step lists of the
// multifactor schedule; JSON maps onto these one-to-one (true/false, integer,
// floating number, string, array of integers).
using ParamValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;

class OptimizerConfig {
 public:
  OptimizerConfig() = default;
  // Names: "sgd", "nag" (sgd with nesterov=true, momentum 0.9 by default),
  // "adam", "adamw". Nothing is checked until validate().
  explicit OptimizerConfig(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  const std::map<std::string, ParamValue>& params() const { return params_; }
  bool has(const std::string& key) const { return params_.count(key) != 0; }

  // Set (or replace) one hyper-parameter; chainable. One overload per type so
  // that literals pick their type unambiguously: 0.1 is a double, 100 an integer.
  OptimizerConfig& set(const std::string& key, double value);
  OptimizerConfig& set(const std::string& key, int64_t value);
  OptimizerConfig& set(const std::string& key, int value) { return set(key, static_cast<int64_t>(value)); }
  OptimizerConfig& set(const std::string& key, bool value);
  OptimizerConfig& set(const std::string& key, std::string value);
  OptimizerConfig& set(const std::string& key, const char* value) { return set(key, std::string(value)); }
  OptimizerConfig& set(const std::string& key, std::vector<int64_t> value);

  // Typed reads with the optimizer's documented default when the key is
  // absent. Integers are accepted where a number is asked for (JSON writes
  // 1.0 as 1 in some producers). Error(kInvalidArgument) naming the optimizer
  // and key for a value of the wrong type.
  double get_number(const std::string& key, double fallback) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> get_int_list(const std::string& key, const std::vector<int64_t>& fallback) const;

  // Throws Error(kInvalidArgument) naming the optimizer and the parameter for
  // an unknown optimizer, an unknown key (including a schedule key that does
  // not belong to the chosen lr_scheduler), a value of the wrong type, or a
  // value out of range.
  void validate() const;
  // The per-key part of validate(): every key is known (for this optimizer or
  // some schedule), of the right type and in range. Rules that span keys (a
  // schedule's required keys, warm-up shorter than max_update) wait for
  // validate(), so a description can be built one key at a time.
  void validate_entries() const;

  // {"optimizer": "adam", "learning_rate": 0.001, "lr_scheduler": "cosine", ...}:
  // one flat object, doubles written with enough digits to read back exactly.
  std::string to_json() const;
  // Parses and validates; Error(kInvalidArgument) for malformed JSON, a
  // missing "optimizer" string, a value JSON cannot map to ParamValue (null,
  // object, non-integer list, integer beyond int64), or anything validate()
  // rejects.
  static OptimizerConfig from_json(const std::string& text);

  bool operator==(const OptimizerConfig& other) const {
    return name_ == other.name_ && params_ == other.params_;
  }
  bool operator!=(const OptimizerConfig& other) const { return !(*this == other); }

 private:
  void check(bool whole) const;
  const ParamValue* find(const std::string& key) const;

  std::string name_;
  std::map<std::string, ParamValue> params_;
};

}  // namespace dt::optim
