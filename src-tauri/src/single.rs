//! One app per Headroom folder, the guard under the single-instance plugin (which hands a
//! second start over to the first where it can see it, see `desktop`): the lock on `app.lock`
//! in Headroom's folder ([`headroom_store::instance`]).

pub use headroom_store::instance::InstanceLock;

/// The lock as the app keeps it (managed state) until the process ends.
#[derive(Debug)]
pub struct Held {
    pub _lock: InstanceLock,
}

/// The lock's file in Headroom's folder.
pub const LOCK: &str = "app.lock";

/// Takes the app's lock, or says which process holds it.
pub fn acquire() -> Result<InstanceLock, String> {
    headroom_store::instance::acquire(LOCK, "Headroom")
}
