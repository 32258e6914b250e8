//! SVG to PNG (resvg) with the system's fonts, for reports and the popover's snapshots.

use headroom_store::CoreError;

use super::plot_err;

/// The system's fonts, loaded once, with the generic `sans-serif` the charts ask for pointed at
/// a family that is really there.
fn font_db() -> Result<std::sync::Arc<resvg::usvg::fontdb::Database>, CoreError> {
    static DB: std::sync::OnceLock<std::sync::Arc<resvg::usvg::fontdb::Database>> =
        std::sync::OnceLock::new();
    if let Some(db) = DB.get() {
        return Ok(db.clone());
    }
    let mut db = resvg::usvg::fontdb::Database::new();
    db.load_system_fonts();
    let has = |name: &str| {
        db.faces()
            .any(|f| f.families.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)))
    };
    // macOS first, then what Linux desktops carry.
    let family = [
        "Helvetica",
        "Helvetica Neue",
        "Arial",
        "DejaVu Sans",
        "Liberation Sans",
        "Noto Sans",
        "FreeSans",
    ]
    .into_iter()
    .find(|n| has(n))
    .map(str::to_owned)
    .or_else(|| {
        db.faces()
            .find_map(|f| f.families.first().map(|(n, _)| n.clone()))
    });
    let Some(family) = family else {
        return Err(CoreError::InvalidInput(
            "no font was found to write the chart's labels into a PNG: install one (Debian/Ubuntu: \
             `sudo apt install fonts-dejavu-core`) or export SVG, which needs none"
                .into(),
        ));
    };
    db.set_sans_serif_family(family);
    Ok(DB.get_or_init(|| std::sync::Arc::new(db)).clone())
}

/// A PNG of one of these SVG charts, `scale` times its size in pixels (2 for a sharp picture on
/// a high-density screen), on white.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
pub fn png_from_svg(svg: &str, scale: f32) -> Result<Vec<u8>, CoreError> {
    use resvg::{tiny_skia, usvg};
    let options = usvg::Options {
        fontdb: font_db()?,
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).map_err(plot_err)?;
    let size = tree.size();
    let (w, h) = (
        (size.width() * scale).ceil() as u32,
        (size.height() * scale).ceil() as u32,
    );
    let mut pixmap = tiny_skia::Pixmap::new(w, h)
        .ok_or_else(|| plot_err(format!("a {w}×{h} picture cannot be made")))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(plot_err)
}
