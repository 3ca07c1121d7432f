#!/bin/sh
# Regenerates a fixture: one TCP connection's payload segments from a shared
# sample capture, one line each: C (client to server) or S, the capture time
# in ns, the payload in hex. Usage: extract.sh PCAP FILTER CLIENT_PORT > OUT
# e.g. extract.sh ../shared/pcaps/nfs_base.pcap "tcp.port==720 && frame.number<=59" 720
set -eu
tshark -r "$1" -Y "($2) && tcp.len>0" -T fields -e tcp.srcport \
    -e frame.time_epoch -e tcp.payload 2>/dev/null |
  awk -v c="$3" '{ split($2, t, "."); ns = t[1] substr(t[2] "000000000", 1, 9);
                   print ($1 == c ? "C" : "S"), ns, $3 }'
# Datagram fixtures (*.dgram) were made the same way from UDP captures, one
# datagram a line, C for requests (rpc.msgtyp 0, dns.flags.response 0):
#   tshark -r PCAP -Y udp -T fields -e rpc.msgtyp -e frame.time_epoch \
#     -e udp.payload | awk '{ split($2, t, "."); print ($1 == 0 ? "C" : "S"),
#     t[1] substr(t[2] "000000000", 1, 9), $3 }'
