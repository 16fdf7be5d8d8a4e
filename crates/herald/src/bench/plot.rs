//! Line charts a bench draws into a PNG: stacked panels sharing a time axis,
//! with a marked instant. Drawn with `plotters` into memory and encoded with
//! `png`; the labels use a font compiled into herald (`font/`, DejaVu Sans cut
//! down to ASCII), so nothing depends on the machine's font libraries.

use std::path::Path;
use std::sync::Once;

use anyhow::{Context, anyhow};
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

static FONT: &[u8] = include_bytes!("font/DejaVuSans-subset.ttf");

const WIDTH: u32 = 1000;
const PANEL_HEIGHT: u32 = 260;
const TITLE_HEIGHT: u32 = 40;

/// One panel: a named series of (seconds, value) points.
pub(super) struct Panel<'a> {
    pub(super) title: &'a str,
    pub(super) unit: &'a str,
    pub(super) points: Vec<(f64, f64)>,
}

/// Draws `panels` one above the other over a shared time axis (seconds), with
/// a vertical line at `mark` named `mark_label`, and writes the PNG to `path`.
pub(super) fn draw_panels(
    path: &Path,
    title: &str,
    panels: &[Panel<'_>],
    mark: (f64, &str),
) -> anyhow::Result<()> {
    register_fonts()?;
    let height = TITLE_HEIGHT + PANEL_HEIGHT * panels.len().max(1) as u32;
    let mut rgb = vec![0u8; (WIDTH * height * 3) as usize];
    let x_max = panels
        .iter()
        .flat_map(|p| p.points.iter().map(|&(x, _)| x))
        .fold(mark.0, f64::max)
        .max(1.0);
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let (head, body) = root.split_vertically(TITLE_HEIGHT);
        head.titled(title, ("sans-serif", 22)).map_err(plot_err)?;
        for (area, panel) in body.split_evenly((panels.len(), 1)).iter().zip(panels) {
            let y_max = panel
                .points
                .iter()
                .map(|&(_, y)| y)
                .fold(0.0, f64::max)
                .max(1e-3)
                * 1.15;
            let mut chart = ChartBuilder::on(area)
                .caption(panel.title, ("sans-serif", 17))
                .margin(8)
                .x_label_area_size(32)
                .y_label_area_size(64)
                .build_cartesian_2d(0.0..x_max, 0.0..y_max)
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_desc("time since start (s)")
                .y_desc(panel.unit)
                .label_style(("sans-serif", 13))
                .draw()
                .map_err(plot_err)?;
            chart
                .draw_series(LineSeries::new(
                    panel.points.iter().copied(),
                    BLUE.stroke_width(2),
                ))
                .map_err(plot_err)?;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(mark.0, 0.0), (mark.0, y_max)],
                    RED.stroke_width(2),
                )))
                .map_err(plot_err)?
                .label(mark.1)
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RED.stroke_width(2)));
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    write_png(path, WIDTH, height, &rgb)
}

/// Makes the bundled font the `sans-serif` family, once per process.
fn register_fonts() -> anyhow::Result<()> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = register_font("sans-serif", FontStyle::Normal, FONT)
            .map_err(|_| anyhow!("the bundled plot font does not parse"));
    });
    result
}

fn plot_err<E: std::error::Error + Send + Sync + 'static>(
    e: DrawingAreaErrorKind<E>,
) -> anyhow::Error {
    anyhow!("drawing the plot: {e}")
}

fn write_png(path: &Path, width: u32, height: u32, rgb: &[u8]) -> anyhow::Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().context("writing the PNG header")?;
    w.write_image_data(rgb).context("writing the PNG")?;
    w.finish().context("finishing the PNG")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A drawn chart is a PNG of the expected size with labels on it (pixels
    /// that are neither white nor a series colour come from text and axes).
    #[test]
    fn draws_a_png_with_three_panels() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.png");
        let points: Vec<(f64, f64)> = (0..20).map(|i| (i as f64 * 5.0, 10.0 + i as f64)).collect();
        let panels = ["size", "rss", "p99"].map(|t| Panel {
            title: t,
            unit: "MiB",
            points: points.clone(),
        });
        draw_panels(&path, "test", &panels, (60.0, "retention")).unwrap();
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(
            (info.width, info.height),
            (WIDTH, TITLE_HEIGHT + 3 * PANEL_HEIGHT)
        );
        let dark = buf[..info.buffer_size()]
            .chunks(3)
            .filter(|p| p[0] < 80 && p[1] < 80 && p[2] < 80)
            .count();
        assert!(dark > 1_000, "only {dark} dark pixels: no labels drawn?");
    }
}
