//! What a turtle or a pocket computer (`kind.rs`) does beyond a computer: the part of
//! CC: Tweaked's server main thread those two need: one worker per power cycle that, tick by
//! tick, runs the turtle's queued commands (one a tick, none while an animation plays:
//! `TurtleBrain.updateCommands`) and the main-thread tasks of `mainThread = true` methods
//! (`LuaContext.issueMainThreadTask`: the answer is a `task_complete` event at the next tick).
//! The Lua halves are `rom/device.lua`; a turtle's commands are `turtle.rs`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mlua::{Lua, Table};
use tokio::sync::mpsc;

use super::kernel::{Ctx, Msg};
use super::kind::DeviceState;
use super::sync::lock;
use super::turtle::{self, ANIMATION_TICKS, Command, Turtle};
use super::value::{Event, Val};

/// Work for the main thread.
enum Job {
    Command(u64, Command),
    /// A main-thread task: its id and what it answers after `true`.
    Task(u64, Vec<Val>),
}

/// Server ticks since the power cycle began, as `os.clock` counts them.
#[derive(Clone, Copy)]
struct Clock {
    boot: Instant,
    tick: Duration,
}

impl Clock {
    fn now(self) -> u64 {
        let tick = self.tick.as_nanos().max(1);
        u64::try_from(
            Instant::now()
                .saturating_duration_since(self.boot)
                .as_nanos()
                / tick,
        )
        .unwrap_or(u64::MAX)
    }

    fn at(self, tick: u64) -> tokio::time::Instant {
        let after = self
            .tick
            .saturating_mul(u32::try_from(tick).unwrap_or(u32::MAX));
        tokio::time::Instant::from_std(self.boot.checked_add(after).unwrap_or(self.boot))
    }
}

/// Adds the device's natives (`device`, and `turtle` on a turtle) and starts this power cycle's
/// main-thread worker. Nothing for a computer.
pub(crate) fn install(lua: &Lua, ctx: &Ctx, natives: &Table) -> mlua::Result<()> {
    let turtle = match &ctx.device {
        DeviceState::Computer => return Ok(()),
        DeviceState::Turtle(t) => Some(t.clone()),
        DeviceState::Pocket => None,
    };
    let (jobs, rx) = mpsc::unbounded_channel();
    let clock = {
        let k = lock(&ctx.kernel);
        Clock {
            boot: k.boot,
            tick: k.tick,
        }
    };
    let device = lua.create_table()?;
    device.set(
        "kind",
        match turtle {
            Some(_) => "turtle",
            None => "pocket",
        },
    )?;
    if let Some(t) = &turtle {
        // Commands a previous boot queued died with it.
        lock(t).pending = 0;
        natives.set("turtle", turtle::api::native(lua, t)?)?;
        device.set("issue", issue(lua, t, jobs.clone())?)?;
    }
    device.set("task", task(lua, jobs)?)?;
    natives.set("device", device)?;
    let worker = Worker {
        turtle,
        clock,
        tx: ctx.tx.clone(),
        generation: ctx.generation,
    };
    let cancel = ctx.cancel.clone();
    ctx.rt.spawn(async move {
        tokio::select! {
            () = cancel.cancelled() => {}
            () = worker.run(rx) => {}
        }
    });
    Ok(())
}

/// `device.issue(name, a, b)`: queues a turtle command for the worker; its id, or why not.
fn issue(
    lua: &Lua,
    state: &Arc<Mutex<Turtle>>,
    jobs: mpsc::UnboundedSender<Job>,
) -> mlua::Result<mlua::Function> {
    let state = state.clone();
    lua.create_function(
        move |_, (name, a, b): (mlua::LuaString, Option<f64>, Option<f64>)| {
            let name = name.to_string_lossy();
            let Some(cmd) = turtle::api::parse(&name, a, b) else {
                return Err(mlua::Error::RuntimeError(format!(
                    "not a turtle command: {name}"
                )));
            };
            match lock(&state).issue() {
                Ok(id) => {
                    // The worker is gone only once the power cycle ends.
                    let _ = jobs.send(Job::Command(id, cmd));
                    Ok((Some(id), None))
                }
                Err(why) => Ok((None, Some(why))),
            }
        },
    )
}

/// `device.task(values...)`: a main-thread task answering `values`; its id.
fn task(lua: &Lua, jobs: mpsc::UnboundedSender<Job>) -> mlua::Result<mlua::Function> {
    let mut next_task = 0u64;
    lua.create_function_mut(move |_, values: mlua::Variadic<mlua::Value>| {
        next_task += 1;
        let answer = values
            .iter()
            .map(|v| match v {
                mlua::Value::Boolean(b) => Val::Bool(*b),
                mlua::Value::String(s) => Val::Str(s.as_bytes().to_vec()),
                mlua::Value::Number(n) => Val::Num(*n),
                mlua::Value::Integer(n) => Val::Num(*n as f64),
                _ => Val::Nil,
            })
            .collect();
        let _ = jobs.send(Job::Task(next_task, answer));
        Ok(next_task)
    })
}

/// The main thread, for one power cycle of one turtle or pocket computer.
struct Worker {
    turtle: Option<Arc<Mutex<Turtle>>>,
    clock: Clock,
    tx: std::sync::mpsc::Sender<Msg>,
    generation: u64,
}

impl Worker {
    fn queue(&self, name: &str, args: Vec<Val>) {
        // A machine that is gone has no queue to fill.
        let _ = self
            .tx
            .send(Msg::Event(Event::new(name, args), Some(self.generation)));
    }

    async fn run(self, mut rx: mpsc::UnboundedReceiver<Job>) {
        let mut commands = VecDeque::new();
        let mut tasks = VecDeque::new();
        // The first tick at which the turtle may run its next command.
        let mut free_at = 0u64;
        loop {
            if commands.is_empty() && tasks.is_empty() {
                match rx.recv().await {
                    Some(job) => push(job, &mut commands, &mut tasks),
                    None => return,
                }
            }
            while let Ok(job) = rx.try_recv() {
                push(job, &mut commands, &mut tasks);
            }
            // Work issued during a tick is done at the next one at the earliest.
            let mut tick = self.clock.now() + 1;
            if tasks.is_empty() {
                tick = tick.max(free_at);
            }
            tokio::select! {
                () = tokio::time::sleep_until(self.clock.at(tick)) => {}
                job = rx.recv() => {
                    // Something new (a task need not wait for an animation): plan again.
                    match job {
                        Some(job) => push(job, &mut commands, &mut tasks),
                        None => return,
                    }
                    continue;
                }
            }
            if tick >= free_at
                && let (Some(turtle), Some((id, cmd))) = (&self.turtle, commands.pop_front())
            {
                let outcome = lock(turtle).execute(&cmd);
                // Command ids are small integers: exact as doubles.
                #[allow(clippy::cast_precision_loss)]
                let mut args = vec![Val::Num(id as f64)];
                args.extend(outcome.result);
                self.queue("turtle_response", args);
                // TurtleBlockEntity.serverTick: after the brain's update, in the same tick.
                if outcome.inventory_changed {
                    self.queue("turtle_inventory", Vec::new());
                }
                free_at = tick + if outcome.animates { ANIMATION_TICKS } else { 1 };
            }
            for (id, answer) in tasks.drain(..) {
                #[allow(clippy::cast_precision_loss)]
                let mut args = vec![Val::Num(id as f64), Val::Bool(true)];
                args.extend(answer);
                self.queue("task_complete", args);
            }
        }
    }
}

fn push(job: Job, commands: &mut VecDeque<(u64, Command)>, tasks: &mut VecDeque<(u64, Vec<Val>)>) {
    match job {
        Job::Command(id, c) => commands.push_back((id, c)),
        Job::Task(id, a) => tasks.push_back((id, a)),
    }
}
