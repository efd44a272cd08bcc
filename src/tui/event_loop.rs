//! The event loop on tokio: terminal events, background job messages, a spinner tick while a run
//! is going, and SIGINT/SIGTERM, all in one `select!`. Generic over the backend and the event
//! stream, so tests can drive it with a `TestBackend` and a channel of events.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::Event;
use futures::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc;

use super::app::{App, Effect};
use super::job::{self, JobHandle, JobMsg};
use super::ui;

/// How often the spinner moves while a run is going.
const TICK: Duration = Duration::from_millis(100);

/// Runs the app until it quits or the event stream ends. `copy` puts text on the clipboard.
///
/// # Errors
/// When drawing fails or the event stream reports an error.
pub async fn run<B, S>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    events: S,
    copy: &mut (dyn FnMut(&str) -> io::Result<()> + Send),
) -> anyhow::Result<()>
where
    B: Backend,
    B::Error: Send + Sync + 'static,
    S: Stream<Item = io::Result<Event>> + Send + Unpin + 'static,
{
    let mut input = forward(events);
    let (tx, mut rx) = mpsc::unbounded_channel::<JobMsg>();
    let mut job: Option<JobHandle> = None;
    if app.indexing() {
        job::spawn_index(Arc::clone(&app.traj), tx.clone());
    }
    let mut tick = tokio::time::interval(TICK);
    let mut signals = Signals::new();
    draw(terminal, app)?;
    loop {
        let effects = tokio::select! {
            ev = input.recv() => match ev {
                Some(Ok(ev)) => drain(app, ev, &mut input)?,
                Some(Err(e)) => return Err(e.into()),
                None => break,
            },
            Some(msg) = rx.recv() => app.on_job(msg),
            _ = tick.tick(), if app.runs.busy() => {
                app.ticks += 1;
                app.touch();
                Vec::new()
            }
            () = signals.next() => vec![Effect::Quit],
        };
        for e in effects {
            match e {
                Effect::Run(req) => {
                    if let Some(j) = &job {
                        j.cancel();
                    }
                    job = Some(job::spawn(*req, Arc::clone(&app.traj), Arc::clone(&app.judge), tx.clone()));
                }
                Effect::Cancel => {
                    if let Some(j) = &job {
                        j.cancel();
                    }
                }
                Effect::Copy(text) => {
                    if let Err(e) = copy(&text) {
                        app.set_status(super::app::Level::Error, format!("copy failed: {e}"));
                    }
                }
                Effect::File(f) => super::file_effect(app, *f),
                Effect::Suspend => match super::suspend() {
                    Ok(true) => {
                        // Back from the shell, on a cleared screen: the next frame is drawn whole
                        // (against an empty buffer; `Terminal::clear` would query the cursor,
                        // which the event stream's reader answers first).
                        terminal.swap_buffers();
                        app.touch();
                    }
                    Ok(false) => app.set_status(super::app::Level::Info, "cannot suspend here: not in a terminal"),
                    Err(e) => app.set_status(super::app::Level::Error, format!("suspend failed: {e}")),
                },
                Effect::Quit => app.quit = true,
            }
        }
        if app.quit {
            if let Some(j) = &job {
                j.cancel();
            }
            break;
        }
        if app.take_dirty() {
            draw(terminal, app)?;
        }
    }
    Ok(())
}

/// Prepares the app for the terminal's size, then draws it (drawing only reads the app).
fn draw<B>(terminal: &mut Terminal<B>, app: &mut App) -> anyhow::Result<()>
where
    B: Backend,
    B::Error: Send + Sync + 'static,
{
    let size = terminal.size()?;
    app.prepare(ratatui::layout::Rect::new(0, 0, size.width, size.height));
    terminal.draw(|f| ui::render(app, f))?;
    Ok(())
}

type Input = mpsc::UnboundedReceiver<io::Result<Event>>;

/// Reads the event stream in its own task, so the loop can take bursts without polling the
/// stream outside its task (crossterm's stream wakes the last waker it was polled with).
fn forward<S>(mut events: S) -> Input
where
    S: Stream<Item = io::Result<Event>> + Send + Unpin + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(ev) = events.next().await {
            let stop = ev.is_err();
            if tx.send(ev).is_err() || stop {
                break;
            }
        }
    });
    rx
}

/// Handles `first` and every event already waiting, so a burst of keys draws once.
fn drain(app: &mut App, first: Event, input: &mut Input) -> anyhow::Result<Vec<Effect>> {
    let mut effects = app.on_event(first);
    let mut n = 0;
    while n < 64 && !effects.iter().any(|e| matches!(e, Effect::Quit)) {
        match input.try_recv() {
            Ok(Ok(ev)) => effects.extend(app.on_event(ev)),
            Ok(Err(e)) => return Err(e.into()),
            Err(_) => break,
        }
        n += 1;
    }
    Ok(effects)
}

/// SIGINT and SIGTERM as a future that resolves when one arrives (never, if they cannot be
/// listened to).
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Signals { term: signal(SignalKind::terminate()).ok(), int: signal(SignalKind::interrupt()).ok() }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        {
            let Signals { term, int } = self;
            let term = async {
                match term {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            let int = async {
                match int {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = term => {},
                () = int => {},
            }
        }
        #[cfg(not(unix))]
        std::future::pending::<()>().await
    }
}
