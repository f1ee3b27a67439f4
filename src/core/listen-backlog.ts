/**
 * The accept queue every berth listener asks for: the kernel caps it at net.core.somaxconn (4096
 * on current Linux), as Go's servers (Nomad, Diego's BBS) get by default. Node asks for 511. A
 * busy server accepts slowly (libuv takes one connection per turn of the event loop, and a turn
 * under load lasts up to a second), and when hundreds of cells open connections meanwhile a queue
 * of 511 overflows: the kernel drops the handshake's last ACK (TcpExtListenOverflows), and the
 * client waits out TCP retransmissions, up to its own 30 s timeout.
 */
export const listenBacklog = 4096;
