//! The listening socket of `serve --http` (and of `--metrics`): a cap on open connections and
//! on each peer's share, a deadline for the first request head, and an idle timeout, applied
//! before any request is read; with authentication, a share of the places only connections
//! that have authenticated may hold.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Accepts connections while fewer than the cap are open, closes the others at once, and
/// fails a connection's reads and writes after `idle` without progress.
pub(super) struct Bounded {
    inner: tokio::net::TcpListener,
    open: Arc<tokio::sync::Semaphore>,
    idle: Duration,
    /// Open connections per peer key (see `peer_key`).
    per_peer: Arc<Mutex<HashMap<std::net::IpAddr, usize>>>,
    max_per_peer: usize,
    head_timeout: Duration,
    /// Places for connections that have not yet authenticated (`keep_for_authenticated`):
    /// fewer than all, so a flood of connections that never authenticate cannot take the
    /// places of clients that did.
    unproven: Option<Arc<tokio::sync::Semaphore>>,
}

impl Bounded {
    /// A listener holding at most `max` connections, `per_peer` from one peer key, each cut
    /// after `idle` without progress or `head_timeout` before its first request head.
    pub(super) fn new(
        inner: tokio::net::TcpListener,
        max: usize,
        per_peer: usize,
        idle: Duration,
        head_timeout: Duration,
    ) -> Bounded {
        Bounded {
            inner,
            open: Arc::new(tokio::sync::Semaphore::new(max.max(1))),
            idle,
            per_peer: Arc::new(Mutex::new(HashMap::new())),
            max_per_peer: per_peer.max(1),
            head_timeout,
            unproven: None,
        }
    }

    /// Keeps `reserve` of the places for connections whose request authenticated: at most the
    /// rest may be held by connections that have not (yet).
    pub(super) fn keep_for_authenticated(mut self, max: usize, reserve: usize) -> Bounded {
        let unproven = max.max(1).saturating_sub(reserve).max(1);
        self.unproven = Some(Arc::new(tokio::sync::Semaphore::new(unproven)));
        self
    }
}

/// Whom a connection counts against: its IPv4 address, or the /64 of its IPv6 address (one
/// host usually holds a whole /64, so counting single addresses would not bound it).
pub(super) fn peer_key(addr: &SocketAddr) -> std::net::IpAddr {
    match addr.ip() {
        std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let mut o = v6.octets();
            o[8..].fill(0);
            std::net::IpAddr::V6(std::net::Ipv6Addr::from(o))
        }
        std::net::IpAddr::V6(v6) => std::net::IpAddr::V4(
            v6.to_ipv4_mapped()
                .unwrap_or(std::net::Ipv4Addr::UNSPECIFIED),
        ),
        v4 => v4,
    }
}

/// A connection's place in its peer's count, given back when it closes.
struct PeerPlace {
    counts: Arc<Mutex<HashMap<std::net::IpAddr, usize>>>,
    key: std::net::IpAddr,
}

impl Drop for PeerPlace {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = counts.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

/// A connection's place among those that have not authenticated: given back when one of its
/// requests authenticates (`Peer::proven`) or when it closes.
type Unproven = Arc<Mutex<Option<tokio::sync::OwnedSemaphorePermit>>>;

/// The peer of a connection (for limits when a caller has no principal), and its place among
/// the connections that have not authenticated.
#[derive(Clone, Debug)]
pub(super) struct Peer {
    pub(super) addr: SocketAddr,
    unproven: Unproven,
}

impl Peer {
    /// A request on this connection authenticated: it no longer holds an unproven place.
    pub(super) fn proven(&self) {
        self.unproven
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, Bounded>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, Bounded>) -> Self {
        Peer {
            addr: *stream.remote_addr(),
            unproven: Arc::clone(&stream.io().unproven),
        }
    }
}

/// A connection and its place under the cap (given back when it closes).
pub(super) struct Guarded {
    io: std::pin::Pin<Box<tokio_io_timeout::TimeoutStream<tokio::net::TcpStream>>>,
    _place: tokio::sync::OwnedSemaphorePermit,
    _peer: PeerPlace,
    unproven: Unproven,
    /// Until the first request head is complete: when it must be, and how far the blank line
    /// that ends it has been matched (`\r\n\r\n`, 0..4).
    head: Option<(tokio::time::Instant, u8)>,
    head_timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl axum::serve::Listener for Bounded {
    type Io = Guarded;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Guarded, SocketAddr) {
        loop {
            let (stream, addr) = axum::serve::Listener::accept(&mut self.inner).await;
            let key = peer_key(&addr);
            let peer = {
                let mut counts = self.per_peer.lock().unwrap_or_else(|e| e.into_inner());
                let n = counts.entry(key).or_default();
                if *n >= self.max_per_peer {
                    drop(stream); // this peer holds its share: closed now
                    continue;
                }
                *n += 1;
                PeerPlace {
                    counts: Arc::clone(&self.per_peer),
                    key,
                }
            };
            let Ok(place) = Arc::clone(&self.open).try_acquire_owned() else {
                drop(stream); // over the cap: closed now, not queued
                continue;
            };
            let unproven = match &self.unproven {
                None => None,
                Some(pool) => match Arc::clone(pool).try_acquire_owned() {
                    Ok(p) => Some(p),
                    // The places left are kept for connections that authenticated.
                    Err(_) => {
                        drop(stream);
                        continue;
                    }
                },
            };
            let mut io = tokio_io_timeout::TimeoutStream::new(stream);
            io.set_read_timeout(Some(self.idle));
            io.set_write_timeout(Some(self.idle));
            let deadline = tokio::time::Instant::now() + self.head_timeout;
            return (
                Guarded {
                    io: Box::pin(io),
                    _place: place,
                    _peer: peer,
                    unproven: Arc::new(Mutex::new(unproven)),
                    head: Some((deadline, 0)),
                    head_timer: Some(Box::pin(tokio::time::sleep_until(deadline))),
                },
                addr,
            );
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl tokio::io::AsyncRead for Guarded {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        let this = &mut *self;
        if this.head.is_none() {
            return this.io.as_mut().poll_read(cx, buf);
        }
        // The first request head is not complete yet: its deadline holds whatever arrives.
        if let Some(timer) = this.head_timer.as_mut() {
            if std::future::Future::poll(timer.as_mut(), cx).is_ready() {
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the request head did not arrive in time",
                )));
            }
        }
        let before = buf.filled().len();
        let r = this.io.as_mut().poll_read(cx, buf);
        if let (Poll::Ready(Ok(())), Some((_, matched))) = (&r, this.head.as_mut()) {
            for b in &buf.filled()[before..] {
                *matched = match (*matched, *b) {
                    (0 | 2, b'\r') => *matched + 1,
                    (1 | 3, b'\n') => *matched + 1,
                    (_, b'\r') => 1,
                    _ => 0,
                };
                if *matched == 4 {
                    this.head = None;
                    this.head_timer = None;
                    break;
                }
            }
        }
        r
    }
}

impl tokio::io::AsyncWrite for Guarded {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.io.as_mut().poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.io.as_mut().poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.io.as_mut().poll_shutdown(cx)
    }
}
