// The one table of the environment variables the library reads, each
// declared once with its type, default and one line of documentation, as
// NCCL declares its NCCL_PARAMs. Readers take a variable's text through
// read_parameter(), which refuses a name the table lacks, so an undeclared
// variable is a bug caught at its first read; the CTest test
// ParameterTableNamesDeclared greps src/ for names the table lacks before that.
// `dt-node --help-env` prints the table; docs/environment.md is its markdown
// (`dt-node --help-env=markdown`), and ParameterTableDocCurrent fails when the
// committed page differs.
//
// Plain constant data and pure functions: safe from any thread. getenv's
// own rule holds: the environment must not change while threads read it.
#pragma once

#include <cstddef>
#include <string>

namespace dt::core {

// What a variable's text must be.
enum class ParameterType {
  kText,     // free text: a host, an interface name
  kInteger,  // a decimal integer in the range the doc line states
  kSeconds,  // a positive decimal number of seconds
  kBytes,    // a positive byte count (suffixes where the doc line says)
  kChoice,   // one of the words the doc line lists
  kPath,     // a file or directory
  kJson,     // a JSON document
};

// Whether the library acts on a variable. An MXNet or ps-lite variable a
// job may carry over that has no effect here is declared as refused: the
// docs' table names it as such, and a process that finds it set says so in
// a warning (ps/job/environment_options.h, mxnet_knob_notes), so it is
// never silently accepted.
enum class Support {
  kHonoured,
  kRefused,
};

struct Parameter {
  const char* name;
  const char* group;          // the section of docs/environment.md
  ParameterType type;
  const char* default_value;  // as the user would write it; "" for unset
  const char* doc;            // one line
  Support support;
};

// The table, in the order of docs/environment.md.
const Parameter* parameters();
size_t parameter_count();

// The entry named name, or null.
const Parameter* find_parameter(const std::string& name);

// getenv(name) for a variable of the table. Error(kInternal) naming it for
// one the table lacks: every variable the library reads is declared.
const char* read_parameter(const char* name);

// "text", "integer", "seconds", "bytes", "choice", "path", "json".
const char* parameter_type_name(ParameterType type);

// The table as dt-node --help-env prints it (a plain-text list).
std::string parameters_as_text();
// The table as docs/environment.md, whole.
std::string parameters_as_markdown();

}  // namespace dt::core
