// The command line a remote host's login shell runs for one process of an
// ssh job, and the quoting it needs.
//
// Why a wrapper: without a terminal, sshd gives a remote command pipes, and
// when the ssh connection ends (dtrun stopped the job, was killed, or the
// network went) the command gets no signal at all; it would run on, the
// orphan that launch.py users remove with `pkill`. `ssh -tt` would deliver
// SIGHUP, but merges stderr into stdout, rewrites line endings and still
// misses grandchildren in other process groups. So the remote side watches
// the one thing every end of the connection produces, end-of-file on its
// standard input (dtrun keeps ssh's stdin open until it stops the job), and
// then ends the command's whole process group:
//
//   sh -c SCRIPT dtrun-remote CMD...   (the login shell exec's it, so its pid
//                                        is the one sshd waits for)
//     setsid CMD... &                  the command leads its own process group
//                                      (its pid is the group id), stdin /dev/null
//     watcher &                        reads the real stdin until EOF, then
//                                      SIGTERM to the group, SIGKILL once the
//                                      command is still alive after 5 s
//     poller &                         SIGKILLs the group when this shell or
//                                      the watcher is gone (killed by hand or
//                                      by the OOM killer): then nothing else
//                                      would stop the command
//     wait; kill the group's leftovers and the helpers; exit with the
//     command's status (128+N when signal N killed it, as shells report it),
//     which ssh hands back to dtrun as its own exit status.
//
// The script is plain POSIX sh and needs setsid(1) (util-linux) on the host;
// the login shell only has to parse `cd`, `&&`, `exec` and single quotes.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dt::dtrun {

// One word for a POSIX shell: 'text', with ' written as '\''.
std::string shell_quote(const std::string& word);

// The script above (no single quotes in it, so it quotes as one word).
const char* remote_wrapper_script();

// "cd DIR && exec env K=V... sh -c SCRIPT dtrun-remote ARGV..." with every
// part quoted: what ssh hands to the remote login shell. The environment is
// set through env(1) so that the login shell need not be a POSIX one.
// secret_on_stdin: the script first reads one line from the session's stdin
// into DT_JOB_SECRET and exports it (exit 97 when stdin ends first), so the
// job's secret reaches the remote process without appearing in any
// command line, here or there.
std::string remote_command(const std::string& dir, const std::map<std::string, std::string>& env,
                           const std::vector<std::string>& argv, bool secret_on_stdin = false);

// One word of rsync's --rsh (-e) value, which rsync splits at spaces itself
// and where only quotes, not backslashes, protect spaces. Throws
// std::runtime_error for a word that holds both quote characters.
std::string rsh_quote(const std::string& word);

}  // namespace dt::dtrun
