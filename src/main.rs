//! The `trapdesk` binary: parses the command line, sets up logging, starts the chosen run mode
//! and waits for it to end. Everything else lives in the library.

use std::process::ExitCode;

use clap::Parser;
use trapdesk::app::Host;
use trapdesk::cli::{Cli, Command, HostArgs};
use trapdesk::client::Failure;
use trapdesk::config::{self, SecretSource};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("trapdesk: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async move {
        match cli.command {
            None => run_host(cli.host).await,
            Some(Command::McpStdio {
                connect,
                standalone,
                host,
            }) => trapdesk::cli::mcp_stdio(host, connect, standalone).await,
            Some(Command::Emulate {
                url,
                id,
                label,
                secret,
                data_dir,
                disk,
            }) => trapdesk::cli::emulate(url, id, label, secret, data_dir, disk).await,
            Some(Command::Exec(a)) => client(trapdesk::client::exec(a).await),
            Some(Command::Run(a)) => client(trapdesk::client::run(a).await),
            Some(Command::Computers(a)) => client(trapdesk::client::computers(a).await),
            Some(Command::Ls(a)) => client(trapdesk::client::ls(a).await),
            Some(Command::Get(a)) => client(trapdesk::client::get(a).await),
            Some(Command::Put(a)) => client(trapdesk::client::put(a).await),
            Some(Command::Sync(a)) => client(trapdesk::sync::sync(a).await),
            Some(Command::Doctor(a)) => client(trapdesk::doctor::doctor(a).await),
            Some(Command::Completions { shell }) => {
                trapdesk::cli::completions(shell);
                Ok(())
            }
            Some(Command::Agent { action, data_dir }) => {
                let dir = trapdesk::admin::data_dir(data_dir);
                dir.and_then(|d| trapdesk::admin::agent(&d, action, &mut std::io::stdout()))
            }
            Some(Command::Secret { action, data_dir }) => {
                let dir = trapdesk::admin::data_dir(data_dir);
                dir.and_then(|d| trapdesk::admin::secret(&d, action, &mut std::io::stdout()))
            }
            Some(Command::Transcript { filter, data_dir }) => {
                match trapdesk::admin::data_dir(data_dir) {
                    Ok(d) => trapdesk::admin::transcript(&d, filter, &mut std::io::stdout()).await,
                    Err(e) => Err(e),
                }
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<Failure>() => match e.downcast::<Failure>() {
            Ok(f) => {
                if !f.message.is_empty() {
                    eprintln!("trapdesk: {}", f.message);
                }
                ExitCode::from(f.code)
            }
            Err(_) => ExitCode::FAILURE,
        },
        Err(e) if e.is::<trapdesk::cli::AlreadyReported>() => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("trapdesk: {}", trapdesk::cli::report(&e));
            ExitCode::FAILURE
        }
    }
}

/// A client command's outcome as the `main` result (its exit code travels in the error).
fn client(r: Result<(), Failure>) -> anyhow::Result<()> {
    r.map_err(anyhow::Error::new)
}

async fn run_host(args: HostArgs) -> anyhow::Result<()> {
    let settings = config::resolve(&args)?;
    let headless = args.mcp_only;
    trapdesk::cli::init_logging(&settings.data_dir, headless)?;
    let mut host = Host::start(settings, true).await?;
    let stop_signal = trapdesk::cli::termination();
    trapdesk::cli::reload_on_hangup(host.session.clone());
    if headless {
        eprintln!(
            "trapdesk {}: gateway ws://{}/gateway, MCP {}",
            env!("CARGO_PKG_VERSION"),
            host.gateway_addr,
            host.mcp_url()
        );
        announce_secret(&host);
    }
    if let Some(n) = args.demo {
        host.start_demo(n);
    }
    if headless {
        let shutdown = host.shutdown.clone();
        tokio::select! {
            _ = stop_signal => tracing::info!("signal received, stopping"),
            _ = shutdown.cancelled() => {}
        }
    } else {
        let (session, settings, shutdown) = (
            host.session.clone(),
            (*host.settings).clone(),
            host.shutdown.clone(),
        );
        let tui = tokio::spawn(trapdesk::tui::run(session, settings, shutdown.clone()));
        tokio::select! {
            r = tui => match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => { host.stop().await; return Err(e.into()); }
                Err(e) => { host.stop().await; anyhow::bail!("console failed: {e}"); }
            },
            _ = stop_signal => {}
        }
    }
    host.stop().await;
    Ok(())
}

/// What `--mcp-only` says about the secret. On a terminal, the line a person types on a
/// computer, secret included; anywhere else (systemd's journal, `2>>host.log`) only where the
/// secret is and how to show it, so that it never lands in a log file.
fn announce_secret(host: &Host) {
    use std::io::IsTerminal;
    let settings = &host.settings;
    let source = match &settings.secret_source {
        SecretSource::Generated(p) => format!("new, stored in {} with mode 0600", p.display()),
        SecretSource::Stored(p) => format!("stored in {}", p.display()),
        SecretSource::Flag => "from --secret".to_owned(),
        SecretSource::Env => "from SANDBOX_PASSWORD".to_owned(),
        SecretSource::ConfigFile => "from the config file".to_owned(),
    };
    if std::io::stderr().is_terminal() {
        eprintln!(
            "link a computer by typing on it: {}",
            config::install_line(host.gateway_addr, &settings.secret)
        );
        eprintln!(
            "secret: {source}\n  `trapdesk secret rotate` makes a new one; `trapdesk secret add COMPUTER` gives one computer its own"
        );
    } else {
        let dir = if config::default_data_dir().as_ref() == Some(&settings.data_dir) {
            String::new()
        } else {
            format!(" --data-dir {}", settings.data_dir.display())
        };
        eprintln!(
            "link a computer: `trapdesk secret show{dir}` prints the line to type on it (the secret is {source}; not written here, since this is no terminal)"
        );
    }
}
