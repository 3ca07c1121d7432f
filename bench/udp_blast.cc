// udp_blast: paced DNS-like traffic on loopback for the live capture
// benchmark (bench/capture_live_bench.sh). A client socket sends queries to
// a server address and a server socket sends the matching responses back,
// so a capture sees call/return pairs; nobody reads them (the kernel drops
// them at the sockets, after the capture tap has seen them).
//   udp_blast CLIENT_IP SERVER_IP PORT PACKETS_PER_SECOND SECONDS
// Prints the number of packets it sent.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

int BoundSocket(const char* ip, uint16_t port) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, ip, &a.sin_addr) != 1 ||
      bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

sockaddr_in Address(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr,
                 "usage: udp_blast CLIENT_IP SERVER_IP PORT PACKETS_PER_SECOND "
                 "SECONDS\n");
    return 2;
  }
  const char* client_ip = argv[1];
  const char* server_ip = argv[2];
  const auto port = static_cast<uint16_t>(std::atoi(argv[3]));
  const double pps = std::atof(argv[4]);
  const double seconds = std::atof(argv[5]);
  if (pps <= 0 || seconds <= 0) {
    std::fprintf(stderr, "udp_blast: rate and duration must be positive\n");
    return 2;
  }
  int client = BoundSocket(client_ip, 0);
  int server = BoundSocket(server_ip, port);
  if (client < 0 || server < 0) {
    std::perror("udp_blast: bind");
    return 1;
  }
  sockaddr_in client_addr{};
  socklen_t len = sizeof client_addr;
  getsockname(client, reinterpret_cast<sockaddr*>(&client_addr), &len);
  const sockaddr_in server_addr = Address(server_ip, port);

  // A DNS query for www.example.com; the response is the same with QR set.
  unsigned char msg[33] = {0, 0, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
                           3, 'w', 'w', 'w', 7, 'e', 'x', 'a', 'm', 'p', 'l',
                           'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1};
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  const double per_packet_ns = 1e9 / pps;
  unsigned long long sent = 0;
  uint16_t id = 0;
  while (true) {
    auto now = Clock::now();
    if (now >= end) break;
    // Send what the schedule owes by now (pairs: query, response).
    auto due = static_cast<unsigned long long>(
        std::chrono::duration<double, std::nano>(now - start).count() /
        per_packet_ns);
    if (sent + 2 > due) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    while (sent + 2 <= due) {
      ++id;
      msg[0] = static_cast<unsigned char>(id >> 8);
      msg[1] = static_cast<unsigned char>(id);
      msg[2] = 0x01;
      sendto(client, msg, sizeof msg, 0,
             reinterpret_cast<const sockaddr*>(&server_addr), sizeof server_addr);
      msg[2] = 0x81;
      sendto(server, msg, sizeof msg, 0,
             reinterpret_cast<const sockaddr*>(&client_addr), sizeof client_addr);
      sent += 2;
    }
  }
  std::printf("%llu\n", sent);
  close(client);
  close(server);
  return 0;
}
