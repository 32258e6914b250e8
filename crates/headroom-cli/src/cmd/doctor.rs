//! `headroom doctor` (first cut): the machine, its memory, Headroom's libtorch, and a dummy matmul
//! on every device libtorch can use. Python environments and macOS conditions come later.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use headroom_core::budget::format_bytes;
use headroom_core::{machine, sysmem};
use serde::Serialize;

/// Arguments of `headroom doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Print one JSON document.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct DeviceCheck {
    device: String,
    name: String,
    memory_total_bytes: u64,
    matmul_ok: bool,
    matmul_ms: Option<f64>,
    /// Where the result tensor actually lives (proves the GPU is used, not the CPU).
    result_device: Option<String>,
    error: Option<String>,
}

#[derive(Debug, Serialize)]
struct Doctor {
    os: String,
    arch: String,
    cpu: Option<String>,
    memory_total_bytes: Option<u64>,
    memory_available_bytes: Option<u64>,
    libtorch: String,
    cuda_devices: i64,
    mps_available: bool,
    threads: i32,
    devices: Vec<DeviceCheck>,
}

fn check(spec: &str) -> DeviceCheck {
    use headroom_torch::{device, measure::guarded};
    let mut out = DeviceCheck {
        device: spec.into(),
        name: String::new(),
        memory_total_bytes: 0,
        matmul_ok: false,
        matmul_ms: None,
        result_device: None,
        error: None,
    };
    let r = guarded(|| {
        let dev = device::resolve(spec)?;
        let info = device::info(dev)?;
        out.name = info.name;
        out.memory_total_bytes = info.capacity;
        let opts = (tch::Kind::Float, dev);
        let a = tch::Tensor::f_randn([512, 512], opts)?;
        let b = tch::Tensor::f_randn([512, 512], opts)?;
        let _warm = a.f_matmul(&b)?;
        device::synchronize(dev)?;
        let t = Instant::now();
        let c = a.f_matmul(&b)?;
        device::synchronize(dev)?;
        out.matmul_ms = Some(t.elapsed().as_secs_f64() * 1e3);
        out.result_device = Some(device::label(c.device()));
        Ok(())
    });
    match r {
        Ok(()) => out.matmul_ok = true,
        Err(e) => out.error = Some(e.to_string()),
    }
    out
}

pub fn run(args: &DoctorArgs) -> Result<ExitCode> {
    std::panic::set_hook(Box::new(|_| {}));
    let mem = sysmem::system_memory();
    let cuda = tch::Cuda::device_count();
    let mps = tch::utils::has_mps();
    let mut specs = vec!["cpu".to_owned()];
    specs.extend((0..cuda).map(|i| format!("cuda:{i}")));
    if mps {
        specs.push("mps".into());
    }
    let d = Doctor {
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
        cpu: machine::cpu_brand(),
        memory_total_bytes: mem.map(|m| m.total),
        memory_available_bytes: mem.map(|m| m.available),
        libtorch: headroom_torch::alloc::libtorch_version(),
        cuda_devices: cuda,
        mps_available: mps,
        threads: tch::get_num_threads(),
        devices: specs.iter().map(|s| check(s)).collect(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&d)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "machine   {} {} · {}",
        d.os,
        d.arch,
        d.cpu.as_deref().unwrap_or("unknown CPU")
    );
    if let Some(m) = mem {
        println!(
            "memory    {} total · {} available",
            format_bytes(m.total),
            format_bytes(m.available)
        );
    }
    println!(
        "libtorch  {} · {} CPU threads · CUDA devices: {} · MPS: {}",
        d.libtorch,
        d.threads,
        d.cuda_devices,
        if d.mps_available {
            "available"
        } else {
            "not available"
        }
    );
    for c in &d.devices {
        let light = if c.matmul_ok { "ok  " } else { "FAIL" };
        match &c.error {
            None => println!(
                "[{light}] {:<7} {} · {} · 512x512 matmul {:.2} ms on {}",
                c.device,
                c.name,
                format_bytes(c.memory_total_bytes),
                c.matmul_ms.unwrap_or(0.0),
                c.result_device.as_deref().unwrap_or("?")
            ),
            Some(e) => println!("[{light}] {:<7} {e}", c.device),
        }
    }
    Ok(if d.devices.iter().all(|c| c.matmul_ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
