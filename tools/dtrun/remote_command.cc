#include "remote_command.h"

#include <stdexcept>

namespace dt::dtrun {

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

const char* remote_wrapper_script() {
  // One line, so that login shells which take no newline inside quotes (csh)
  // still pass it on; "& " ends a background command where "&;" would be a
  // syntax error. fd 3 keeps the session's stdin for the watcher alone: the
  // command reads /dev/null. The two helpers lead their own process groups
  // (setsid) so that killing them also kills the sleep they may be in.
  //   p: the command.  w: the watcher, on the session's stdin: at EOF,
  //   SIGTERM to p's group, SIGKILL after 5 s.  m: the poller: when this
  //   shell ($$) or the watcher disappears (killed by hand, by the OOM
  //   killer), nothing would stop p any more, so it SIGKILLs p's group.
  // At the end: kill both helpers and what is left of p's group, and exit
  // with p's status.
  return "exec 3<&0 </dev/null; "
         "setsid \"$@\" 3<&- & p=$!; "
         "setsid sh -c \"while read -r _; do :; done; kill -TERM -\\$0 \\$0; i=0; "
         "while kill -0 \\$0 && [ \\$i -lt 50 ]; do sleep 0.1; i=\\$((i+1)); done; "
         "kill -KILL -\\$0 \\$0\" $p <&3 >/dev/null 2>&1 & w=$!; "
         "exec 3<&-; "
         "setsid sh -c \"while kill -0 \\$0 \\$1; do sleep 1; done; kill -KILL -\\$2 \\$2\" $$ $w $p "
         "</dev/null >/dev/null 2>&1 & m=$!; "
         "wait $p; s=$?; "
         "kill -KILL -$m -$w -$p 2>/dev/null; "
         "exit $s";
}

std::string remote_command(const std::string& dir, const std::map<std::string, std::string>& env,
                           const std::vector<std::string>& argv, bool secret_on_stdin) {
  std::string out = "cd " + shell_quote(dir) + " && exec env";
  for (const auto& [name, value] : env) out += " " + shell_quote(name + "=" + value);
  // sh's read takes a pipe byte by byte, so the rest of the session's stdin
  // is left for the wrapper's watcher.
  const std::string script = std::string(secret_on_stdin ? "IFS= read -r DT_JOB_SECRET || exit 97; export DT_JOB_SECRET; "
                                                         : "") +
                             remote_wrapper_script();
  out += " sh -c " + shell_quote(script) + " dtrun-remote";
  for (const std::string& word : argv) out += " " + shell_quote(word);
  return out;
}

std::string rsh_quote(const std::string& word) {
  if (!word.empty() && word.find_first_of(" '\"") == std::string::npos) return word;
  if (word.find('\'') == std::string::npos) return "'" + word + "'";
  if (word.find('"') == std::string::npos) return "\"" + word + "\"";
  throw std::runtime_error("the ssh argument \"" + word + "\" holds both ' and \", which rsync's -e cannot pass");
}

}  // namespace dt::dtrun
