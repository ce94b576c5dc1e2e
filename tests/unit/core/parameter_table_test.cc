// The table of environment variables (core/parameter_table.h).
#include "core/parameter_table.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <set>
#include <string>

#include "core/error.h"
#include "error_code_of.h"

namespace dt::core {
namespace {

TEST(CoreParameterTable, EachVariableIsDeclaredOnceWithADocLine) {
  std::set<std::string> names;
  for (size_t i = 0; i < parameter_count(); ++i) {
    const Parameter& p = parameters()[i];
    EXPECT_TRUE(names.insert(p.name).second) << p.name << " is declared twice";
    for (const char* c = p.name; *c != '\0'; ++c) {
      EXPECT_TRUE(std::isupper(static_cast<unsigned char>(*c)) || std::isdigit(static_cast<unsigned char>(*c)) ||
                  *c == '_')
          << p.name;
    }
    EXPECT_GT(std::string(p.doc).size(), 10u) << p.name;
    EXPECT_EQ(std::string(p.doc).find('\n'), std::string::npos) << p.name << ": one line";
    EXPECT_NE(std::string(p.group), "") << p.name;
    EXPECT_EQ(find_parameter(p.name), &p);
  }
  EXPECT_EQ(find_parameter("DT_NO_SUCH_VARIABLE"), nullptr);
}

TEST(CoreParameterTable, MxnetKnobsWeActOnAreHonouredAndTheOthersRefusedByName) {
  for (const char* name : {"MXNET_KVSTORE_REDUCTION_NTHREADS", "MXNET_ENABLE_GPU_P2P", "MXNET_KVSTORE_BIGARRAY_BOUND",
                           "MXNET_CUDNN_AUTOTUNE_DEFAULT"}) {
    const Parameter* p = find_parameter(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(p->support, Support::kHonoured) << name;
  }
  EXPECT_STREQ(find_parameter("MXNET_KVSTORE_REDUCTION_NTHREADS")->default_value, "4");
  EXPECT_STREQ(find_parameter("MXNET_ENABLE_GPU_P2P")->default_value, "1");
  // MXNet's default: time the algorithms, limited workspace.
  EXPECT_STREQ(find_parameter("MXNET_CUDNN_AUTOTUNE_DEFAULT")->default_value, "1");
  // Every variable that is not honoured is a refused one, and the table's
  // pages name it so, on its own row.
  const std::string markdown = parameters_as_markdown();
  const std::string text = parameters_as_text();
  size_t refused = 0;
  for (size_t i = 0; i < parameter_count(); ++i) {
    const Parameter& p = parameters()[i];
    if (p.support != Support::kRefused) continue;
    ++refused;
    EXPECT_NE(markdown.find("| `" + std::string(p.name) + "` | " + parameter_type_name(p.type) +
                            " |  | **Refused: not honoured.** "),
              std::string::npos)
        << p.name;
    EXPECT_NE(text.find("  " + std::string(p.name) + " (" + parameter_type_name(p.type) + ", refused: not honoured)"),
              std::string::npos)
        << p.name;
  }
  EXPECT_GE(refused, 2u);
  EXPECT_EQ(find_parameter("MXNET_UPDATE_ON_KVSTORE")->support, Support::kRefused);
  EXPECT_EQ(markdown.find("accepted"), std::string::npos) << "nothing is accepted without effect";
}

TEST(CoreParameterTable, ReadingAnUndeclaredVariableIsABug) {
  setenv("DT_LOG_LEVEL_TEST_UNDECLARED", "1", 1);
  std::string message;
  EXPECT_EQ(test_support::code_of([] { read_parameter("DT_LOG_LEVEL_TEST_UNDECLARED"); }, &message),
            ErrorCode::kInternal);
  EXPECT_NE(message.find("DT_LOG_LEVEL_TEST_UNDECLARED"), std::string::npos) << message;
  unsetenv("DT_LOG_LEVEL_TEST_UNDECLARED");
}

TEST(CoreParameterTable, ADeclaredVariableReadsAsGetenv) {
  setenv("DT_KVSTORE_OVERLAP", "0", 1);
  ASSERT_NE(read_parameter("DT_KVSTORE_OVERLAP"), nullptr);
  EXPECT_STREQ(read_parameter("DT_KVSTORE_OVERLAP"), "0");
  unsetenv("DT_KVSTORE_OVERLAP");
  EXPECT_EQ(read_parameter("DT_KVSTORE_OVERLAP"), nullptr);
}

TEST(CoreParameterTable, TheTextAndTheMarkdownNameEveryVariable) {
  const std::string text = parameters_as_text();
  const std::string markdown = parameters_as_markdown();
  for (size_t i = 0; i < parameter_count(); ++i) {
    const std::string name = parameters()[i].name;
    EXPECT_NE(text.find("  " + name + " ("), std::string::npos) << name;
    EXPECT_NE(markdown.find("| `" + name + "` |"), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace dt::core
