//! The lock service: one lease at a time, each grant with the next fencing token. A lease
//! expires when its time is up (here: when the run says so, standing for a GC pause or a slow
//! network); the client that held it is not told and keeps its token.

/// A fencing token: granted in increasing order, never reused.
pub type Token = u8;

/// A client, numbered from 1 as the traces number them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientId(pub u8);

#[derive(Debug, Default)]
pub struct LockService {
    holder: Option<ClientId>,
    last_token: Token,
}

/// Why the lock service granted no lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotGranted {
    /// Another client holds the lease.
    Held(ClientId),
    /// Every token a trace can carry is spent.
    TokensSpent,
}

impl LockService {
    pub fn acquire(&mut self, client: ClientId) -> Result<Token, NotGranted> {
        if let Some(holder) = self.holder {
            return Err(NotGranted::Held(holder));
        }
        let token = self
            .last_token
            .checked_add(1)
            .ok_or(NotGranted::TokensSpent)?;
        self.last_token = token;
        self.holder = Some(client);
        Ok(token)
    }

    /// The lease runs out; `None` when nobody held it.
    pub fn expire(&mut self) -> Option<ClientId> {
        self.holder.take()
    }

    pub fn holder(&self) -> Option<ClientId> {
        self.holder
    }

    pub fn last_token(&self) -> Token {
        self.last_token
    }
}
