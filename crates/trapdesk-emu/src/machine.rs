//! The computer's own OS thread: CC's execution model.
//!
//! Every top-level program is a coroutine. `coroutine.yield(filter)` returns here; the machine
//! waits for the next event (a queued event, a timer coming due, a socket event from a tokio
//! task) and resumes every top-level coroutine whose filter matches it (`terminate` matches
//! all). The boot program is one such coroutine; each `run_lua` adds another beside it, which
//! is how a test can run code while the client runs. One Lua state lives per power cycle: a
//! reboot throws it away and boots a fresh one.

use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};

use std::sync::atomic::AtomicUsize;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use mlua::thread::ThreadStatus;
use mlua::{Function, Lua, MultiValue, Table, Thread, Value};
use tokio_util::sync::CancellationToken;

use super::kernel::{Ctx, Kernel, Msg, Power, PowerState, error_text};
use super::kind::DeviceState;
use super::peripherals::bench::SharedBench;
use super::peripherals::spec::DiskDrive;
use super::screen::Screen;
use super::spec::ComputerSpec;
use super::sync::lock;
use super::value::{Event, Val, Wrappers};
use super::watchdog::Watchdog;

/// One top-level coroutine.
struct Proc {
    co: Thread,
    filter: Option<Vec<u8>>,
    /// For `run_lua`: where to send the result, and what it printed so far.
    reply: Option<tokio::sync::oneshot::Sender<Result<String, String>>>,
    capture: Option<Vec<u8>>,
    done: bool,
}

/// How resuming a coroutine ended.
enum Step {
    Yielded,
    Finished,
    Failed(String),
    Killed,
}

/// What the machine shares with the [`super::Computer`] handles.
pub(crate) struct Shared {
    pub screen: Arc<Mutex<Screen>>,
    pub drive: Arc<Mutex<Option<DiskDrive>>>,
    pub bench: SharedBench,
    pub device: DeviceState,
    pub state: tokio::sync::watch::Sender<PowerState>,
    pub handles: Weak<()>,
}

pub(crate) struct Machine {
    spec: ComputerSpec,
    rt: tokio::runtime::Handle,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    screen: Arc<Mutex<Screen>>,
    drive: Arc<Mutex<Option<DiskDrive>>>,
    bench: SharedBench,
    /// A turtle's fuel and slots, kept across power cycles as the block keeps them.
    device: DeviceState,
    generation: u64,
    /// On, off, or off by a hard abort, for the handles to read.
    state: tokio::sync::watch::Sender<PowerState>,
    /// Alive while any [`super::Computer`] handle is: a computer that is off and that nobody
    /// can turn on again ends its thread.
    handles: Weak<()>,
}

impl Machine {
    pub(crate) fn new(
        spec: ComputerSpec,
        rt: tokio::runtime::Handle,
        tx: Sender<Msg>,
        rx: Receiver<Msg>,
        shared: Shared,
    ) -> Self {
        Self {
            spec,
            rt,
            tx,
            rx,
            screen: shared.screen,
            drive: shared.drive,
            bench: shared.bench,
            device: shared.device,
            generation: 0,
            state: shared.state,
            handles: shared.handles,
        }
    }

    /// Runs power cycles; between a shutdown and the next turn-on the computer is off (its
    /// events and `run_lua` calls are dropped, as CC drops events for a computer that is off).
    /// Ends when the computer is off and every handle is gone.
    pub(crate) fn run(mut self) {
        let mut label = self.spec.label.clone();
        loop {
            let (power, new_label) = self.power_cycle(label);
            label = new_label;
            match power {
                Power::Reboot | Power::TurnOn => continue,
                Power::Shutdown => self.state.send_replace(PowerState::Off),
                Power::Abort => self.state.send_replace(PowerState::Aborted),
            };
            if !self.wait_turn_on() {
                return;
            }
            self.state.send_replace(PowerState::On);
        }
    }

    /// Off: waits for [`Power::TurnOn`], dropping everything else. False when nobody is left
    /// who could turn the computer on.
    fn wait_turn_on(&mut self) -> bool {
        loop {
            match self.rx.recv_timeout(Duration::from_millis(200)) {
                Ok(Msg::Power(Power::TurnOn)) => return true,
                // Dropping a `RunLua` drops its reply: the caller sees `EmuError::Stopped`.
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) if self.handles.strong_count() == 0 => return false,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return false,
            }
        }
    }

    /// One boot: fresh Lua state, bios, event loop. Returns why it ended and the label (which
    /// survives reboots, as it does on CC).
    fn power_cycle(&mut self, label: Option<String>) -> (Power, Option<String>) {
        self.generation += 1;
        lock(&self.screen).reset();
        let kernel = Arc::new(Mutex::new(Kernel {
            id: self.spec.id,
            label,
            queue: VecDeque::new(),
            timers: HashMap::new(),
            next_timer: 0,
            boot: Instant::now(),
            tick: self.spec.tick,
            power: None,
        }));
        let ctx = Ctx {
            kernel: kernel.clone(),
            screen: self.screen.clone(),
            watchdog: Arc::new(Mutex::new(Watchdog {
                resumed_at: Instant::now(),
                warned_at: None,
                timeout: self.spec.yield_timeout,
                abort_timeout: self.spec.abort_timeout,
                killed: false,
            })),
            root: self.spec.root.clone(),
            rt: self.rt.clone(),
            tx: self.tx.clone(),
            generation: self.generation,
            cancel: CancellationToken::new(),
            websockets: Arc::new(AtomicUsize::new(0)),
            max_websocket_message: self.spec.limits.max_websocket_message,
            disk_space: self.spec.limits.disk_space,
            drive: self.drive.clone(),
            bench: self.bench.clone(),
            device: self.device.clone(),
            advanced: self.spec.advanced,
        };
        let power = match super::boot::build(&ctx) {
            Ok((lua, bios)) => {
                let p = self.event_loop(&ctx, &lua, &bios);
                drop(lua);
                p
            }
            Err(e) => {
                tracing::error!(id = self.spec.id, "emulator bios failed: {e}");
                Power::Shutdown
            }
        };
        // Every socket of this boot closes now, as CC: Tweaked's HTTP API closes its resources
        // when the computer shuts down: the connection is dropped (docs/emulator.md, "What
        // the emulator enforces").
        ctx.cancel.cancel();
        if power == Power::Abort {
            show_abort(&mut lock(&self.screen));
        }
        let label = lock(&kernel).label.clone();
        (power, label)
    }

    fn event_loop(&mut self, ctx: &Ctx, lua: &Lua, bios: &Table) -> Power {
        let Ok(spawn) = bios.get::<Function>("spawn") else {
            return Power::Shutdown;
        };
        let wrap = match (bios.get("wrap_ws"), bios.get("wrap_response")) {
            (Ok(ws), Ok(response)) => Wrappers { ws, response },
            _ => return Power::Shutdown,
        };
        let Ok(boot) = bios.get::<Function>("boot") else {
            return Power::Shutdown;
        };
        let Ok(co) = spawn.call::<Thread>(boot) else {
            return Power::Shutdown;
        };
        let mut procs = vec![Proc {
            co,
            filter: None,
            reply: None,
            capture: None,
            done: false,
        }];
        let mut first = Some(MultiValue::new());
        loop {
            // Deliver: the boot resume first, then one event at a time.
            let event = match first.take().map(|args| (None, args)) {
                Some(e) => e,
                None => match self.next_event(ctx, lua, &spawn, &mut procs) {
                    Ok(ev) => {
                        let mut args = MultiValue::new();
                        let Ok(name) = lua.create_string(&ev.name) else {
                            return Power::Shutdown;
                        };
                        args.push_back(Value::String(name));
                        for a in &ev.args {
                            match a.to_lua(lua, &wrap) {
                                Ok(v) => args.push_back(v),
                                Err(e) => tracing::warn!("event argument: {e}"),
                            }
                        }
                        (Some(ev.name), args)
                    }
                    Err(power) => return power,
                },
            };
            let (name, args) = event;
            for (i, proc) in procs.iter_mut().enumerate() {
                let wants = match (&proc.filter, &name) {
                    (_, None) => i == 0,
                    (None, Some(_)) => true,
                    (Some(f), Some(n)) => f == n || n.as_slice() == b"terminate",
                };
                if !proc.done
                    && wants
                    && matches!(self.resume(ctx, proc, args.clone()), Step::Killed)
                {
                    return Power::Abort;
                }
                if let Some(p) = lock(&ctx.kernel).power.take() {
                    return p;
                }
            }
            if procs[0].done {
                // The bios program ended: CC turns the computer off.
                return Power::Shutdown;
            }
            procs.retain(|p| !p.done);
        }
    }

    /// Waits for the next event, handling `run_lua` and power messages meanwhile.
    fn next_event(
        &mut self,
        ctx: &Ctx,
        lua: &Lua,
        spawn: &Function,
        procs: &mut Vec<Proc>,
    ) -> Result<Event, Power> {
        loop {
            // Handle everything that already arrived.
            loop {
                match self.rx.try_recv() {
                    Ok(msg) => self.handle(ctx, lua, spawn, procs, msg)?,
                    Err(std::sync::mpsc::TryRecvError::Empty) => break,
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                        return Err(Power::Shutdown);
                    }
                }
            }
            if let Some(p) = lock(&ctx.kernel).power.take() {
                return Err(p);
            }
            let wait = {
                let mut k = lock(&ctx.kernel);
                let now = Instant::now();
                let mut due: Vec<(Instant, u64)> = k
                    .timers
                    .iter()
                    .filter(|(_, t)| **t <= now)
                    .map(|(id, t)| (*t, *id))
                    .collect();
                due.sort();
                for (_, id) in due {
                    k.timers.remove(&id);
                    // Timer ids are small integers: exact as doubles.
                    #[allow(clippy::cast_precision_loss)]
                    k.push(Event::new("timer", vec![Val::Num(id as f64)]));
                }
                if let Some(ev) = k.queue.pop_front() {
                    return Ok(ev);
                }
                k.timers
                    .values()
                    .min()
                    .map(|t| t.saturating_duration_since(now))
            };
            let msg = match wait {
                Some(d) => match self.rx.recv_timeout(d) {
                    Ok(m) => m,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return Err(Power::Shutdown),
                },
                None => match self.rx.recv() {
                    Ok(m) => m,
                    Err(_) => return Err(Power::Shutdown),
                },
            };
            self.handle(ctx, lua, spawn, procs, msg)?;
        }
    }

    fn handle(
        &mut self,
        ctx: &Ctx,
        lua: &Lua,
        spawn: &Function,
        procs: &mut Vec<Proc>,
        msg: Msg,
    ) -> Result<(), Power> {
        match msg {
            Msg::Event(ev, generation) => {
                if generation.is_none_or(|g| g == self.generation) {
                    lock(&ctx.kernel).push(ev);
                }
            }
            // Turning on a computer that is on does nothing, as in CC.
            Msg::Power(Power::TurnOn) => {}
            Msg::Power(p) => return Err(p),
            Msg::RunLua { code, reply } => {
                let co = lua.globals().raw_get::<Table>("_G").and_then(|g| {
                    let env = lua.create_table()?;
                    let meta = lua.create_table()?;
                    meta.raw_set("__index", g)?;
                    env.set_metatable(Some(meta))?;
                    let f = lua
                        .load(code.as_str())
                        .set_name("=run_lua")
                        .set_mode(mlua::chunk::ChunkMode::Text)
                        .set_environment(env)
                        .into_function()?;
                    spawn.call::<Thread>(f)
                });
                match co {
                    Err(e) => {
                        // The caller may have given up waiting.
                        let _ = reply.send(Err(error_text(&e)));
                    }
                    Ok(co) => {
                        let mut p = Proc {
                            co,
                            filter: None,
                            reply: Some(reply),
                            capture: Some(Vec::new()),
                            done: false,
                        };
                        if let Step::Killed = self.resume(ctx, &mut p, MultiValue::new()) {
                            return Err(Power::Abort);
                        }
                        procs.push(p);
                        if let Some(p) = lock(&ctx.kernel).power.take() {
                            return Err(p);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Resumes one top-level coroutine with the watchdog reset and its output captured.
    fn resume(&mut self, ctx: &Ctx, p: &mut Proc, args: MultiValue) -> Step {
        {
            let mut w = lock(&ctx.watchdog);
            w.resumed_at = Instant::now();
            w.warned_at = None;
        }
        lock(&ctx.screen).capture = p.capture.take();
        // mlua turns panics in callbacks into Lua errors; should one still escape, the computer
        // dies rather than the host.
        let result = catch_unwind(AssertUnwindSafe(|| p.co.resume::<MultiValue>(args)));
        p.capture = lock(&ctx.screen).capture.take();
        let killed = lock(&ctx.watchdog).killed;
        let step = match result {
            _ if killed => Step::Killed,
            Err(_) => Step::Killed,
            Ok(Err(e)) => Step::Failed(error_text(&e)),
            Ok(Ok(values)) => {
                if p.co.status() == ThreadStatus::Resumable {
                    p.filter = match values.front() {
                        Some(Value::String(s)) => Some(s.as_bytes().to_vec()),
                        _ => None,
                    };
                    Step::Yielded
                } else {
                    Step::Finished
                }
            }
        };
        match &step {
            Step::Yielded => {}
            Step::Finished | Step::Killed => p.done = true,
            Step::Failed(_) => p.done = true,
        }
        if p.done {
            let out = p.capture.take().unwrap_or_default();
            if let Some(reply) = p.reply.take() {
                let r = match &step {
                    Step::Failed(e) => Err(e.clone()),
                    Step::Killed => Err("Too long without yielding".to_owned()),
                    _ => Ok(String::from_utf8_lossy(&out).into_owned()),
                };
                // The caller may have given up waiting.
                let _ = reply.send(r);
            } else if let Step::Failed(e) = &step {
                tracing::warn!(id = self.spec.id, "bios failed: {e}");
            }
        }
        step
    }
}

/// What CC: Tweaked leaves on the screen of a computer it shut down for not yielding
/// (`ComputerExecutor.displayFailure`): the error in red, then its generic line in white.
fn show_abort(screen: &mut Screen) {
    screen.reset();
    let lines: [(&[u8], u8); 3] = [
        (b"Error running computer", b'e'),
        (b"Too long without yielding", b'e'),
        (b"ComputerCraft may be installed incorrectly", b'0'),
    ];
    for (row, (text, colour)) in lines.into_iter().enumerate() {
        screen.text_colour = colour;
        screen.x = 1;
        screen.y = row as i64 + 1;
        screen.put(text, None, None);
    }
}
