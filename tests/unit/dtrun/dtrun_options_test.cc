#include <gtest/gtest.h>

#include "options.h"

namespace dt::dtrun {
namespace {

Options parse(std::vector<std::string> args) { return parse_options(args); }

TEST(DtrunOptions, ServersDefaultToWorkersAndTheCommandFollowsTheSeparator) {
  const Options o = parse({"-n", "3", "--", "./train", "--epochs", "1", "-n", "7"});
  EXPECT_EQ(o.num_workers, 3);
  EXPECT_EQ(o.num_servers, 3);
  EXPECT_EQ(o.launcher, Launcher::kLocal);
  EXPECT_EQ(o.command, (std::vector<std::string>{"./train", "--epochs", "1", "-n", "7"}));
}

TEST(DtrunOptions, LongAttachedAndLaunchPyForms) {
  const Options o = parse({"--num-workers=2", "-s1", "--launcher", "slurm", "--timeout=2.5", "--log-dir", "logs",
                           "--interface", "eth0", "--", "w"});
  EXPECT_EQ(o.num_workers, 2);
  EXPECT_EQ(o.num_servers, 1);
  EXPECT_EQ(o.launcher, Launcher::kSlurm);
  EXPECT_DOUBLE_EQ(o.timeout_s, 2.5);
  EXPECT_EQ(o.log_dir, "logs");
  EXPECT_EQ(o.interface, "eth0");
}

TEST(DtrunOptions, EnvSettingsKeepTheirFormsAndRoles) {
  const Options o = parse({"-n", "1", "--env", "A=x:y=z", "--env", "B:/p", "--env", "HOME", "--env-server",
                           "S=1", "--env-worker=W=2", "--", "w"});
  ASSERT_EQ(o.env.size(), 3u);
  EXPECT_EQ(o.env[0].name, "A");
  EXPECT_EQ(o.env[0].value, "x:y=z");  // '=' wins over ':'
  EXPECT_EQ(o.env[1].name, "B");
  EXPECT_EQ(o.env[1].value, "/p");  // launch.py's K:V
  EXPECT_TRUE(o.env[2].from_caller);
  ASSERT_EQ(o.env_server.size(), 1u);
  EXPECT_EQ(o.env_server[0].value, "1");
  ASSERT_EQ(o.env_worker.size(), 1u);
  EXPECT_EQ(o.env_worker[0].name, "W");
}

TEST(DtrunOptions, OneQuotedCommandLineRunsThroughTheShell) {
  // launch.py users write the command as one string.
  EXPECT_EQ(parse({"-n", "2", "--", "python train.py --lr 0.1"}).command,
            (std::vector<std::string>{"/bin/sh", "-c", "python train.py --lr 0.1"}));
  EXPECT_EQ(parse({"-n", "2", "--", "python\ttrain.py"}).command,
            (std::vector<std::string>{"/bin/sh", "-c", "python\ttrain.py"}));
  // One word, or several arguments, run as they are.
  EXPECT_EQ(parse({"-n", "2", "--", "./train"}).command, (std::vector<std::string>{"./train"}));
  EXPECT_EQ(parse({"-n", "2", "--", "./train", "--name", "a b"}).command,
            (std::vector<std::string>{"./train", "--name", "a b"}));
  EXPECT_NE(std::string(usage_text()).find("/bin/sh -c"), std::string::npos);
}

TEST(DtrunOptions, SyncDstDirIsIgnoredWithANoteWithoutSsh) {
  for (const char* launcher : {"local", "mpi", "slurm"}) {
    const Options o = parse({"-n", "1", "--launcher", launcher, "--sync-dst-dir", "/scratch/job", "--", "w"});
    EXPECT_TRUE(o.sync_dst_dir.empty()) << launcher;
    ASSERT_EQ(o.notes.size(), 1u) << launcher;
    EXPECT_NE(o.notes[0].find("--sync-dst-dir /scratch/job ignored"), std::string::npos) << o.notes[0];
    EXPECT_EQ(o.notes[0].find('\n'), std::string::npos) << "one line";
  }
  const Options plain = parse({"-n", "1", "--sync-dst-dir=/d", "--", "w"});
  EXPECT_EQ(plain.launcher, Launcher::kLocal);
  EXPECT_EQ(plain.notes.size(), 1u);
  EXPECT_TRUE(parse({"-n", "1", "--", "w"}).notes.empty());
  // With ssh it is kept: dtrun rsyncs there.
  const Options ssh = parse({"-n", "1", "--launcher", "ssh", "-H", "h", "--sync-dst-dir", "/d", "--", "w"});
  EXPECT_EQ(ssh.sync_dst_dir, "/d");
  EXPECT_TRUE(ssh.notes.empty());
  // The other ssh options still need ssh: they change how it connects.
  EXPECT_THROW(parse({"-n", "1", "--ssh-config", "/c", "--", "w"}), UsageError);
}

TEST(DtrunOptions, HelpNeedsNothingElse) { EXPECT_TRUE(parse({"--help"}).help); }

TEST(DtrunOptions, BadCommandLinesAreUsageErrors) {
  EXPECT_THROW(parse({"--", "w"}), UsageError);                          // no -n
  EXPECT_THROW(parse({"-n", "2"}), UsageError);                          // no command
  EXPECT_THROW(parse({"-n", "0", "--", "w"}), UsageError);
  EXPECT_THROW(parse({"-n", "2x", "--", "w"}), UsageError);
  EXPECT_THROW(parse({"-n"}), UsageError);
  EXPECT_THROW(parse({"-n", "1", "-s", "-1", "--", "w"}), UsageError);
  EXPECT_THROW(parse({"-n", "1", "--timeout", "-1", "--", "w"}), UsageError);
  EXPECT_THROW(parse({"-n", "1", "--launcher", "yarn", "--", "w"}), UsageError);
  EXPECT_THROW(parse({"-n", "1", "--env", "1X=2", "--", "w"}), UsageError);
  EXPECT_THROW(parse({"-n", "1", "--frobnicate", "--", "w"}), UsageError);
}

TEST(DtrunOptions, TheFirstWordThatIsNotAnOptionStartsTheCommandAsInLaunchPy) {
  // launch.py -n 2 -s 2 python train.py --lr 0.1: argparse's REMAINDER.
  const Options o = parse({"-n", "2", "-s", "2", "python", "train.py", "--lr", "0.1", "-n", "7"});
  EXPECT_EQ(o.num_workers, 2);
  EXPECT_EQ(o.num_servers, 2);
  EXPECT_EQ(o.command, (std::vector<std::string>{"python", "train.py", "--lr", "0.1", "-n", "7"}));
  // An option's value is not the command, and options before it still count.
  const Options v = parse({"-n", "1", "--env", "A=1", "--log-dir", "logs", "./w", "--kvstore", "dist_sync"});
  EXPECT_EQ(v.log_dir, "logs");
  EXPECT_EQ(v.command, (std::vector<std::string>{"./w", "--kvstore", "dist_sync"}));
  // One quoted command line runs through the shell as after "--".
  EXPECT_EQ(parse({"-n", "2", "python train.py --lr 0.1"}).command,
            (std::vector<std::string>{"/bin/sh", "-c", "python train.py --lr 0.1"}));
  // An unknown option before the command is still an error, not a command.
  EXPECT_THROW(parse({"-n", "1", "--frobnicate", "./w"}), UsageError);
}

TEST(DtrunOptions, ZeroServersIsAJobOfWorkersOnly) {
  // The all-reduce stores' layout: a scheduler and workers, no servers.
  const Options o = parse({"-n", "4", "-s", "0", "--", "w"});
  EXPECT_EQ(o.num_workers, 4);
  EXPECT_EQ(o.num_servers, 0);
}

TEST(DtrunOptions, TheJobLayoutCannotBeOverriddenThroughEnv) {
  EXPECT_THROW(parse({"-n", "1", "--env", "DMLC_NUM_WORKER=4", "--", "w"}), UsageError);
  EXPECT_THROW(parse({"-n", "1", "--env-worker", "DMLC_WORKER_ID=0", "--", "w"}), UsageError);
  EXPECT_NO_THROW(parse({"-n", "1", "--env", "DMLC_NODE_HOST=10.0.0.2", "--", "w"}));
}

TEST(DtrunOptions, TlsIsForTheLocalLauncherOnly) {
  EXPECT_FALSE(parse({"-n", "1", "--", "w"}).tls);
  EXPECT_TRUE(parse({"-n", "1", "--tls", "--", "w"}).tls);
  // Other hosts cannot read the certificate dtrun makes in its private directory.
  EXPECT_THROW(parse({"-n", "1", "--tls", "--launcher", "mpi", "--", "w"}), UsageError);
  EXPECT_THROW(parse({"-n", "1", "--tls", "--launcher", "ssh", "-H", "hosts", "--", "w"}), UsageError);
}

// Issue 19: --worker-loss reaches every process as DT_WORKER_LOSS, and
// dtrun itself keeps the job going when the processes will.
TEST(DtrunOptions, WorkerLossPolicyReachesEveryProcessAndDtrun) {
  const Options o = parse({"-n", "2", "--worker-loss", "continue", "--", "w"});
  EXPECT_EQ(o.worker_loss, "continue");
  ASSERT_EQ(o.env.size(), 1u);
  EXPECT_EQ(o.env[0].name, "DT_WORKER_LOSS");
  EXPECT_EQ(o.env[0].value, "continue");
  EXPECT_TRUE(continues_after_worker_loss(o, {}));
  EXPECT_FALSE(continues_after_worker_loss(parse({"-n", "2", "--worker-loss=fail", "--", "w"}),
                                           {{"DT_WORKER_LOSS", "continue"}}));
  // Without the flag: an --env setting, else dtrun's own environment.
  const Options plain = parse({"-n", "2", "--", "w"});
  EXPECT_FALSE(continues_after_worker_loss(plain, {}));
  EXPECT_TRUE(continues_after_worker_loss(plain, {{"DT_WORKER_LOSS", "continue"}}));
  EXPECT_TRUE(continues_after_worker_loss(parse({"-n", "2", "--env", "DT_WORKER_LOSS=continue", "--", "w"}), {}));
  EXPECT_THROW(parse({"-n", "2", "--worker-loss", "retry", "--", "w"}), UsageError);
  // mpirun and srun end every rank when one fails: accepted, with a note.
  EXPECT_EQ(parse({"-n", "2", "--worker-loss", "continue", "--launcher", "mpi", "--", "w"}).notes.size(), 1u);
  // An all-reduce job (no servers) goes on too, its workers regrouped, and
  // takes a worker started again to rejoin it: no note either way.
  const Options allreduce = parse({"-n", "2", "-s", "0", "--worker-loss", "continue", "--", "w"});
  EXPECT_TRUE(allreduce.notes.empty());
  EXPECT_TRUE(continues_after_worker_loss(allreduce, {}));
  EXPECT_TRUE(continues_after_worker_loss(parse({"-n", "2", "-s", "0", "--", "w"}), {{"DT_WORKER_LOSS", "continue"}}));
  const Options restarted =
      parse({"-n", "2", "-s", "0", "--worker-loss", "continue", "--max-restarts", "2", "--", "w"});
  EXPECT_TRUE(restarted.notes.empty());
}

// --server-replication reaches every process as DT_SERVER_REPLICATION, and
// dtrun itself keeps the job going after one lost server when they will.
TEST(DtrunOptions, ServerReplicationReachesEveryProcessAndDtrun) {
  const Options o = parse({"-n", "2", "--server-replication", "1", "--", "w"});
  EXPECT_EQ(o.server_replication, "1");
  ASSERT_EQ(o.env.size(), 1u);
  EXPECT_EQ(o.env[0].name, "DT_SERVER_REPLICATION");
  EXPECT_EQ(o.env[0].value, "1");
  EXPECT_FALSE(o.env[0].from_caller);
  EXPECT_TRUE(o.notes.empty());
  EXPECT_EQ(tolerated_server_losses(o, {}), 1);
  const Options off = parse({"-n", "2", "--server-replication=0", "--", "w"});
  EXPECT_EQ(off.server_replication, "0");
  ASSERT_EQ(off.env.size(), 1u);
  EXPECT_EQ(off.env[0].value, "0");
  // The option wins over dtrun's own environment.
  EXPECT_EQ(tolerated_server_losses(off, {{"DT_SERVER_REPLICATION", "1"}}), 0);
  // Without the flag: an --env setting, else dtrun's own environment.
  const Options plain = parse({"-n", "2", "--", "w"});
  EXPECT_TRUE(plain.server_replication.empty());
  EXPECT_TRUE(plain.env.empty());
  EXPECT_EQ(tolerated_server_losses(plain, {}), 0);
  EXPECT_EQ(tolerated_server_losses(plain, {{"DT_SERVER_REPLICATION", "1"}}), 1);
  EXPECT_EQ(tolerated_server_losses(plain, {{"DT_SERVER_REPLICATION", "0"}}), 0);
  EXPECT_EQ(tolerated_server_losses(parse({"-n", "2", "--env", "DT_SERVER_REPLICATION=1", "--", "w"}), {}), 1);
  EXPECT_EQ(tolerated_server_losses(parse({"-n", "2", "--env", "DT_SERVER_REPLICATION=0", "--", "w"}),
                                    {{"DT_SERVER_REPLICATION", "1"}}),
            0);
  // A bare --env K passes dtrun's own value on: the inherited one decides.
  EXPECT_EQ(tolerated_server_losses(parse({"-n", "2", "--env", "DT_SERVER_REPLICATION", "--", "w"}),
                                    {{"DT_SERVER_REPLICATION", "1"}}),
            1);
  // All servers but one at most, lost one after the other (new copies
  // restore two holders per part in between).
  EXPECT_EQ(tolerated_server_losses(parse({"-n", "2", "-s", "2", "--server-replication", "1", "--", "w"}), {}), 1);
  EXPECT_EQ(tolerated_server_losses(parse({"-n", "2", "-s", "3", "--server-replication", "1", "--", "w"}), {}), 2);
  EXPECT_EQ(tolerated_server_losses(parse({"-n", "2", "-s", "4", "--server-replication", "1", "--", "w"}), {}), 3);
  EXPECT_NE(std::string(usage_text()).find("--server-replication N"), std::string::npos);
}

TEST(DtrunOptions, ServerReplicationIsZeroOrOneWithTwoOrMoreServers) {
  for (const char* bad : {"2", "x", "", "01", "-1"}) {
    try {
      parse({"-n", "2", "--server-replication", bad, "--", "w"});
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("--server-replication must be 0 or 1 (one replica per key part), got \"") + bad + "\"");
    }
  }
  EXPECT_THROW(parse({"-n", "2", "--server-replication", "--", "w"}), UsageError);
  EXPECT_THROW(parse({"-n", "2", "--server-replication"}), UsageError);
  // The replica of a key part lives on the next server: one server has none.
  for (const std::vector<std::string>& servers :
       {std::vector<std::string>{"-n", "1"}, {"-n", "4", "-s", "1"}, {"-n", "4", "-s", "0"}}) {
    std::vector<std::string> args = servers;
    args.insert(args.end(), {"--server-replication", "1", "--", "w"});
    try {
      parse(args);
      ADD_FAILURE() << "accepted " << args[1];
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "--server-replication 1 needs 2 or more servers (-s)");
    }
  }
  EXPECT_EQ(parse({"-n", "1", "-s", "2", "--server-replication", "1", "--", "w"}).num_servers, 2);
  EXPECT_NO_THROW(parse({"-n", "1", "--server-replication", "0", "--", "w"}));
  // mpirun and srun end every rank when one fails: accepted, with a note.
  for (const char* launcher : {"mpi", "slurm"}) {
    const Options o = parse({"-n", "2", "--server-replication", "1", "--launcher", launcher, "--", "w"});
    ASSERT_EQ(o.notes.size(), 1u) << launcher;
    EXPECT_NE(o.notes[0].find("--server-replication 1"), std::string::npos) << o.notes[0];
    EXPECT_NE(o.notes[0].find("mpirun and srun stop every rank"), std::string::npos) << o.notes[0];
  }
}

// Issue 19: --max-restarts, torchrun's name; 0 (no restart) by default.
TEST(DtrunOptions, MaxRestartsCountsWholeJobRestarts) {
  EXPECT_EQ(parse({"-n", "2", "--", "w"}).max_restarts, 0);
  EXPECT_EQ(parse({"-n", "2", "--max-restarts", "3", "--", "w"}).max_restarts, 3);
  EXPECT_EQ(parse({"-n", "2", "--max-restarts=0", "--", "w"}).max_restarts, 0);
  EXPECT_THROW(parse({"-n", "2", "--max-restarts", "-1", "--", "w"}), UsageError);
  EXPECT_THROW(parse({"-n", "2", "--max-restarts", "two", "--", "w"}), UsageError);
  EXPECT_NE(std::string(usage_text()).find("--max-restarts N"), std::string::npos);
}

}  // namespace
}  // namespace dt::dtrun
