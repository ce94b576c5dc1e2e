// -H HOSTFILE: launch.py's format (one host per line, "host[:port]") with
// comments, user@host and bracketed IPv6, and dmlc-tracker's placement.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "hostfile.h"

namespace dt::dtrun {
namespace {

TEST(DtrunHostfile, OneHostPerLineSkippingBlanksAndComments) {
  const auto hosts = parse_hostfile("# the cluster\n\nnode1\n  node2  \t\r\n\n10.0.0.3 # rack 2\n", "hosts");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].destination, "node1");
  EXPECT_EQ(hosts[1].destination, "node2");
  EXPECT_EQ(hosts[2].destination, "10.0.0.3");
  EXPECT_EQ(hosts[2].address, "10.0.0.3");
  for (const auto& h : hosts) EXPECT_EQ(h.port, 0);
}

TEST(DtrunHostfile, PortsUsersAndIpv6) {
  const auto hosts = parse_hostfile("node1:2222\nalice@node2\nbob@node3:23\n[fd00::5]:2200\nfd00::6\ncarol@[::1]\n", "h");
  ASSERT_EQ(hosts.size(), 6u);
  EXPECT_EQ(hosts[0].destination, "node1");
  EXPECT_EQ(hosts[0].port, 2222);
  EXPECT_EQ(hosts[1].destination, "alice@node2");
  EXPECT_EQ(hosts[1].address, "node2");
  EXPECT_EQ(hosts[1].port, 0);
  EXPECT_EQ(hosts[2].destination, "bob@node3");
  EXPECT_EQ(hosts[2].address, "node3");
  EXPECT_EQ(hosts[2].port, 23);
  EXPECT_EQ(hosts[3].destination, "fd00::5");
  EXPECT_EQ(hosts[3].port, 2200);
  EXPECT_EQ(hosts[4].destination, "fd00::6");
  EXPECT_EQ(hosts[4].port, 0);
  EXPECT_EQ(hosts[5].destination, "carol@::1");
  EXPECT_EQ(hosts[5].address, "::1");
  // text() is what a user wrote, for messages.
  EXPECT_EQ(hosts[2].text(), "bob@node3:23");
  EXPECT_EQ(hosts[3].text(), "[fd00::5]:2200");
  EXPECT_EQ(hosts[4].text(), "fd00::6");
}

void expect_error(const std::string& text, const std::string& fragment) {
  try {
    parse_hostfile(text, "hosts");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(DtrunHostfile, MalformedEntriesNameTheirLine) {
  expect_error("node1\nnode2:ssh\n", "hosts:2");
  expect_error("node1:0\n", "not a port");
  expect_error("node1:70000\n", "hosts:1");
  expect_error("node1 node2\n", "one host per line");
  expect_error("[fd00::1\n", "closing ']'");
  expect_error("[fd00::1]x\n", "only \":port\"");
  expect_error("-oProxyCommand=x\n", "is not a host");
  expect_error("alice@\n", "is not a host");
  expect_error("\n# nothing\n  \n", "lists no host");
}

TEST(DtrunHostfile, ServersThenWorkersCycleOneListAsDmlcTrackerDoes) {
  const auto hosts = parse_hostfile("a\nb\nc\n", "h");
  // dmlc-tracker's ssh.py: process i of servers-then-workers on hosts[i % H].
  EXPECT_EQ(server_host(hosts, 0).destination, "a");
  EXPECT_EQ(server_host(hosts, 1).destination, "b");
  const char* workers[] = {"c", "a", "b", "c"};
  for (int w = 0; w < 4; ++w) EXPECT_EQ(worker_host(hosts, 2, w).destination, workers[w]) << "worker " << w;
  // Without servers the workers start on the first host; with more servers
  // than hosts the servers wrap and the workers go on from there.
  EXPECT_EQ(worker_host(hosts, 0, 0).destination, "a");
  EXPECT_EQ(server_host(hosts, 4).destination, "b");
  EXPECT_EQ(worker_host(hosts, 5, 0).destination, "c");
  const auto one = parse_hostfile("only\n", "h");
  EXPECT_EQ(server_host(one, 3).destination, "only");
  EXPECT_EQ(worker_host(one, 3, 7).destination, "only");
  EXPECT_THROW(worker_host({}, 1, 0), std::runtime_error);
}

TEST(DtrunHostfile, AWorkersLocalPlaceCountsTheWorkersOfItsHost) {
  // -s 2 -n 4 on a b c: workers on c a b c, so worker 3 is c's second.
  const auto hosts = parse_hostfile("a\nb\nc\n", "h");
  const std::pair<int, int> places[] = {{0, 2}, {0, 1}, {0, 1}, {1, 2}};
  for (int w = 0; w < 4; ++w) {
    const LocalPlace place = worker_local_place(hosts, 2, 4, w);
    EXPECT_EQ(std::make_pair(place.rank, place.size), places[w]) << "worker " << w;
  }
  // Two lines for one machine (another login, another port) are one host:
  // its two workers must not both take GPU 0.
  const auto same = parse_hostfile("alice@gpu1\ngpu1:2222\n", "h");
  EXPECT_EQ(worker_local_place(same, 0, 2, 0).rank, 0);
  EXPECT_EQ(worker_local_place(same, 0, 2, 1).rank, 1);
  EXPECT_EQ(worker_local_place(same, 0, 2, 1).size, 2);
  EXPECT_THROW(worker_local_place({}, 0, 1, 0), std::runtime_error);
}

TEST(DtrunHostfile, ReadsAFileAndReportsAMissingOne) {
  const std::string path = testing::TempDir() + "dtrun_hostfile_test." + std::to_string(getpid());
  {
    std::ofstream out(path);
    out << "h1\nh2:2022\n";
  }
  const auto hosts = read_hostfile(path);
  std::remove(path.c_str());
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[1].port, 2022);
  EXPECT_THROW(read_hostfile(path), std::runtime_error);
}

}  // namespace
}  // namespace dt::dtrun
