//! The `trapdesk` binary: parses the command line, sets up logging, starts the chosen run mode
//! and waits for it to end. Everything else lives in the library.

use std::process::ExitCode;

use clap::Parser;
use trapdesk::app::Host;
use trapdesk::cli::{Cli, Command, HostArgs};
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
        Err(e) if e.is::<trapdesk::cli::AlreadyReported>() => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("trapdesk: {}", trapdesk::cli::report(&e));
            ExitCode::FAILURE
        }
    }
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
        // One line a person can type on a computer as it is, secret included.
        eprintln!(
            "link a computer by typing on it: {}",
            config::install_line(host.gateway_addr, &host.settings.secret)
        );
        match &host.settings.secret_source {
            SecretSource::Generated(p) => eprintln!(
                "secret: new, stored in {} with mode 0600\n  `trapdesk secret rotate` makes a new one; `trapdesk secret add COMPUTER` gives one computer its own",
                p.display()
            ),
            SecretSource::Stored(p) => eprintln!("secret: stored in {}", p.display()),
            SecretSource::Flag => eprintln!("secret: from --secret"),
            SecretSource::Env => eprintln!("secret: from SANDBOX_PASSWORD"),
            SecretSource::ConfigFile => eprintln!("secret: from the config file"),
        }
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
