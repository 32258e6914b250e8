//! A report written to a folder: the document, its charts as SVG and PNG, the points as CSV.

use super::*;

pub(super) fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<PathBuf, CoreError> {
    std::fs::write(path, bytes).map_err(|source| CoreError::Io {
        what: "cannot write the report",
        path: path.display().to_string(),
        source,
    })?;
    Ok(path.to_path_buf())
}

pub(super) fn create_dir(dir: &Path) -> Result<(), CoreError> {
    std::fs::create_dir_all(dir).map_err(|source| CoreError::Io {
        what: "cannot create the report folder",
        path: dir.display().to_string(),
        source,
    })
}

/// Writes `svg` as `BASE.svg` and `BASE.png` in `dir`.
pub(super) fn write_pictures(dir: &Path, base: &str, svg: &str) -> Result<Vec<PathBuf>, CoreError> {
    Ok(vec![
        write(&dir.join(format!("{base}.svg")), svg)?,
        write(
            &dir.join(format!("{base}.png")),
            png_from_svg(svg, PNG_SCALE)?,
        )?,
    ])
}

/// Writes run `id`'s report in `format` into `dir` (`run-ID.EXT`; a Markdown report has its
/// pictures beside it as SVG and PNG); returns the files written.
pub fn export(
    ledger: &Ledger,
    id: i64,
    format: Format,
    dir: &Path,
) -> Result<Vec<PathBuf>, CoreError> {
    let (r, points) = ledger.get_run(id)?;
    let rec = recorded(ledger, id)?;
    create_dir(dir)?;
    let base = dir.join(format!("run-{id}.{}", format.ext()));
    let mut files = Vec::new();
    match format {
        Format::Json => {
            let doc = serde_json::json!({ "run": r, "recorded": rec, "points": points });
            files.push(write(&base, serde_json::to_string_pretty(&doc)?)?);
        }
        Format::Csv => files.push(write(&base, points_csv(&points))?),
        Format::Md => {
            let charts = charts(ledger, &r, &points)?;
            let mut images = Vec::new();
            for c in &charts {
                let name = format!("run-{id}{}", c.suffix);
                files.extend(write_pictures(dir, &name, &c.svg)?);
                images.push((name, c.alt));
            }
            let md = markdown(&r, &rec, &points, &images);
            files.insert(0, write(&base, md)?);
        }
        Format::Html => {
            let charts = charts(ledger, &r, &points)?;
            let svgs: Vec<&str> = charts.iter().map(|c| c.svg.as_str()).collect();
            files.push(write(&base, html(&r, &rec, &points, &svgs))?);
        }
        Format::Svg | Format::Png => {
            let charts = charts(ledger, &r, &points)?;
            if charts.is_empty() {
                return Err(CoreError::InvalidInput(format!(
                    "run {id} ({}) has no curves to draw: export it as md, html, csv or json",
                    r.kind
                )));
            }
            for c in &charts {
                let path = dir.join(format!("run-{id}{}.{}", c.suffix, format.ext()));
                files.push(if format == Format::Svg {
                    write(&path, &c.svg)?
                } else {
                    write(&path, png_from_svg(&c.svg, PNG_SCALE)?)?
                });
            }
        }
    }
    Ok(files)
}
