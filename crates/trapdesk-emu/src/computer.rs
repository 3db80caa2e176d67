//! The [`Computer`] handle: what tests, `--demo` and `emulate` hold to spawn a computer, queue
//! its events, run Lua on it, and turn it on and off. The computer itself runs on its own thread
//! (`machine.rs`); what Rust does to its peripherals is `peripherals/handle.rs`.

use std::sync::{Arc, Mutex};

use crate::error::EmuError;
use crate::kernel::PowerState;
use crate::peripherals::spec::{DiskDrive, Floppy};
use crate::spec::ComputerSpec;
use crate::value::EventArg;
use crate::{fs, kernel, kind, machine, peripherals, screen, sync, value};

/// A handle on an emulated computer, on or off. Cheap to clone. Dropping every handle does not
/// turn the computer off (its own sockets still feed it events): call [`Computer::shutdown`].
/// A computer that is off and has no handle left is gone for good.
#[derive(Clone)]
pub struct Computer {
    pub(crate) tx: std::sync::mpsc::Sender<kernel::Msg>,
    screen: Arc<Mutex<screen::Screen>>,
    /// The disk drive, shared with the machine's `fs` and `peripheral`.
    drive: Arc<Mutex<Option<DiskDrive>>>,
    /// The peripherals, shared with the machine.
    pub(crate) bench: peripherals::bench::SharedBench,
    state: tokio::sync::watch::Receiver<PowerState>,
    /// Counts the handles, for the machine thread (see `machine::Machine::handles`).
    _alive: Arc<()>,
    id: u64,
}

impl Computer {
    /// Boots the computer on its own thread; returns at once.
    ///
    /// # Errors
    /// `EmuError::Io` when the disk directory cannot be created, `EmuError::Setup` when the OS
    /// refuses a thread.
    pub fn spawn(spec: ComputerSpec, rt: tokio::runtime::Handle) -> Result<Computer, EmuError> {
        fs::private_dir(&spec.root).map_err(|source| EmuError::Io {
            path: spec.root.clone(),
            source,
        })?;
        fs::tighten(&spec.root);
        let (tx, rx) = std::sync::mpsc::channel();
        let screen = Arc::new(Mutex::new(screen::Screen::new(spec.size.0, spec.size.1)));
        let drive = Arc::new(Mutex::new(spec.drive.clone()));
        let device = kind::DeviceState::new(&spec.device, spec.advanced);
        if let Some(f) = spec.drive.as_ref().and_then(|d| d.floppy.as_ref()) {
            fs::private_dir(&f.root).map_err(|source| EmuError::Io {
                path: f.root.clone(),
                source,
            })?;
            fs::tighten(&f.root);
        }
        let floppies = spec.root.parent().map(|p| p.join("disk"));
        let mut bench = peripherals::bench::Bench::new(spec.id, drive.clone(), floppies);
        for (name, p) in &spec.peripherals {
            // Events of peripherals there from boot are nobody's: the computer finds them.
            bench.attach(name, p.clone()).map_err(EmuError::Setup)?;
        }
        let bench = Arc::new(Mutex::new(bench));
        let (state_tx, state) = tokio::sync::watch::channel(PowerState::On);
        let alive = Arc::new(());
        let id = spec.id;
        let machine = machine::Machine::new(
            spec,
            rt,
            tx.clone(),
            rx,
            machine::Shared {
                screen: screen.clone(),
                drive: drive.clone(),
                bench: bench.clone(),
                device,
                state: state_tx,
                handles: Arc::downgrade(&alive),
            },
        );
        std::thread::Builder::new()
            .name(format!("emu-{id}"))
            // Dropping the machine drops the state's sender: handles then read the computer
            // as off for good.
            .spawn(move || machine.run())
            .map_err(|e| EmuError::Setup(e.to_string()))?;
        Ok(Computer {
            tx,
            screen,
            drive,
            bench,
            state,
            _alive: alive,
            id,
        })
    }

    /// The computer's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Queue an event as if CC did (e.g. "char"/"key" for typing, "terminate"). Like CC, the
    /// event is dropped when the queue already holds 256.
    pub fn queue_event(&self, name: &str, args: Vec<EventArg>) {
        let args = args.into_iter().map(value::Val::from).collect();
        // A computer that is off has no queue: dropping the event is what CC would do.
        let _ = self
            .tx
            .send(kernel::Msg::Event(value::Event::new(name, args), None));
    }

    /// Types text as a person would: one `char` event per character, and `key` enter for each
    /// newline.
    pub fn type_text(&self, text: &str) {
        for c in text.chars() {
            if c == '\n' {
                self.queue_event(
                    "key",
                    vec![
                        EventArg::Num(f64::from(kernel::KEY_ENTER)),
                        EventArg::Bool(false),
                    ],
                );
            } else {
                let mut buf = [0u8; 4];
                self.queue_event(
                    "char",
                    vec![EventArg::Str(c.encode_utf8(&mut buf).as_bytes().to_vec())],
                );
            }
        }
    }

    /// Loads `code` and runs it in a new coroutine beside the running programs (it gets events
    /// like any top-level coroutine). Resolves with what it wrote to the terminal, or its error.
    ///
    /// # Errors
    /// `EmuError::Lua` with the message when it fails to compile or raises, `EmuError::Stopped`
    /// when the computer is off or turns off first.
    pub async fn run_lua(&self, code: &str) -> Result<String, EmuError> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.tx
            .send(kernel::Msg::RunLua {
                code: code.to_owned(),
                reply,
            })
            .map_err(|_| EmuError::Stopped)?;
        match rx.await {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(msg)) => Err(EmuError::Lua(msg)),
            Err(_) => Err(EmuError::Stopped),
        }
    }

    /// The terminal's lines, as text (bytes above 0x7F shown as Latin-1).
    pub fn screen_text(&self) -> Vec<String> {
        match self.screen.lock() {
            Ok(s) => s.lines(),
            Err(p) => p.into_inner().lines(),
        }
    }

    /// The terminal's size in cells (columns, rows).
    pub fn screen_size(&self) -> (usize, usize) {
        match self.screen.lock() {
            Ok(s) => s.size(),
            Err(p) => p.into_inner().size(),
        }
    }

    /// Puts `floppy` into the disk drive, as a player would: it is mounted at `/disk` and a
    /// `disk` event names the drive. Nothing happens without a drive or with a floppy in it
    /// already (the player's hand holds the new one).
    ///
    /// # Errors
    /// `EmuError::Io` when the floppy's directory cannot be made.
    pub fn insert_disk(&self, floppy: Floppy) -> Result<(), EmuError> {
        fs::private_dir(&floppy.root).map_err(|source| EmuError::Io {
            path: floppy.root.clone(),
            source,
        })?;
        let side = {
            let mut d = sync::lock(&self.drive);
            match d.as_mut() {
                Some(drive) if drive.floppy.is_none() => {
                    drive.floppy = Some(floppy);
                    drive.side.clone()
                }
                _ => return Ok(()),
            }
        };
        self.queue_event("disk", vec![EventArg::Str(side.into_bytes())]);
        Ok(())
    }

    /// Takes the floppy out of the drive, as a player would: `/disk` is unmounted and a
    /// `disk_eject` event names the drive. Returns the floppy, if there was one.
    pub fn eject_disk(&self) -> Option<Floppy> {
        let (side, floppy) = {
            let mut d = sync::lock(&self.drive);
            let drive = d.as_mut()?;
            (drive.side.clone(), drive.floppy.take()?)
        };
        self.queue_event("disk_eject", vec![EventArg::Str(side.into_bytes())]);
        Some(floppy)
    }

    /// Resizes the terminal as CC does when a monitor or the window holding the terminal
    /// changes size: what fits is kept, and a `term_resize` event is queued.
    pub fn resize(&self, width: usize, height: usize) {
        match self.screen.lock() {
            Ok(mut s) => s.resize(width, height),
            Err(p) => p.into_inner().resize(width, height),
        }
        self.queue_event("term_resize", Vec::new());
    }

    /// Restarts the computer: a fresh Lua state that runs startup again. Returns at once.
    pub fn reboot(&self) {
        // Off already: nothing to reboot.
        let _ = self.tx.send(kernel::Msg::Power(kernel::Power::Reboot));
    }

    /// Turns the computer off. Returns at once; await [`Computer::wait_stopped`] to know it is off.
    pub fn shutdown(&self) {
        // Off already: nothing to do.
        let _ = self.tx.send(kernel::Msg::Power(kernel::Power::Shutdown));
    }

    /// Turns on a computer that is off, as a player's right-click does: it boots afresh and
    /// runs startup. Nothing happens to a computer that is on. Returns at once.
    pub fn turn_on(&self) {
        // The thread is gone only when every handle was, and this is one.
        let _ = self.tx.send(kernel::Msg::Power(kernel::Power::TurnOn));
    }

    /// Resolves when the computer is off (shut down, or its program ended, or it was shut down
    /// for not yielding).
    pub async fn wait_stopped(&self) {
        let mut rx = self.state.clone();
        // An error means the machine is gone, which also means off.
        let _ = rx.wait_for(|s| *s != PowerState::On).await;
    }

    /// Whether the computer is off.
    pub fn is_stopped(&self) -> bool {
        *self.state.borrow() != PowerState::On
    }

    /// On, off, or off by a hard abort.
    pub fn power_state(&self) -> PowerState {
        *self.state.borrow()
    }
}
