//! Sweeps over the user's own command: `--sweep NAME=v1,v2` values substituted for `{NAME}` in
//! the command's arguments (never through a shell), one run per combination.

use crate::error::Invalid;

/// One swept name and its values.
pub type Axis = (String, Vec<String>);

/// Parses `NAME=v1,v2,...`.
pub fn parse_axis(spec: &str) -> Result<Axis, Invalid> {
    let bad = |why: &str| {
        Invalid(format!(
            "--sweep {spec:?}: {why}; write it as NAME=v1,v2 and put {{NAME}} in the command"
        ))
    };
    let (name, values) = spec.split_once('=').ok_or_else(|| bad("no '='"))?;
    let name = name.trim();
    let ok_name = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok_name {
        return Err(bad("the name must be letters, digits and '_'"));
    }
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_owned()).collect();
    if values.iter().any(String::is_empty) {
        return Err(bad("an empty value"));
    }
    // A batch is a whole number of samples, or `auto` alone (the planner's sweep).
    if name == "batch" {
        if values.iter().any(|v| v == "auto") {
            if values.len() > 1 {
                return Err(bad(
                    "batch=auto stands alone (the planner picks the batches)",
                ));
            }
        } else if let Some(v) = values
            .iter()
            .find(|v| !v.parse::<u32>().is_ok_and(|b| (1..=MAX_BATCH).contains(&b)))
        {
            return Err(bad(&format!(
                "batch {v:?} is not a whole number from 1 to {MAX_BATCH}"
            )));
        }
    }
    Ok((name.to_owned(), values))
}

/// The largest batch a sweep over the user's command takes.
pub const MAX_BATCH: u32 = 1_000_000;

/// Parses every `--sweep` given; a name given twice is refused (its values would be taken from
/// one and labelled with both).
pub fn parse_axes(specs: &[String]) -> Result<Vec<Axis>, Invalid> {
    let axes = specs
        .iter()
        .map(|s| parse_axis(s))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, (name, _)) in axes.iter().enumerate() {
        if axes[..i].iter().any(|(n, _)| n == name) {
            return Err(Invalid(format!(
                "--sweep {name}=… is given twice; give its values once: --sweep {name}=v1,v2"
            )));
        }
    }
    Ok(axes)
}

/// Every combination of the axes' values, the first axis varying slowest.
pub fn combinations(axes: &[Axis]) -> Vec<Vec<(String, String)>> {
    axes.iter().fold(vec![Vec::new()], |acc, (name, values)| {
        acc.iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut c = prefix.clone();
                    c.push((name.clone(), v.clone()));
                    c
                })
            })
            .collect()
    })
}

/// The command with `{NAME}` replaced in every argument; each axis must appear somewhere.
pub fn substitute(command: &[String], combo: &[(String, String)]) -> Result<Vec<String>, Invalid> {
    for (name, _) in combo {
        let mark = format!("{{{name}}}");
        if !command.iter().any(|a| a.contains(&mark)) {
            return Err(Invalid(format!(
                "--sweep {name}=...: the command has no {mark} to replace; put it where the value goes, e.g. --batch-size {mark}"
            )));
        }
    }
    Ok(replace_all(command, combo))
}

/// The command with each `{NAME}` of `combo` replaced by its value, in every argument; a
/// placeholder not in `combo` stays.
pub fn replace_all(command: &[String], combo: &[(String, String)]) -> Vec<String> {
    command
        .iter()
        .map(|a| {
            combo
                .iter()
                .fold(a.clone(), |s, (n, v)| s.replace(&format!("{{{n}}}"), v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn axes_combinations_and_substitution() {
        let bs = parse_axis("bs=16,32").expect("bs");
        let nw = parse_axis("workers=0,2,4").expect("workers");
        assert_eq!(bs, ("bs".into(), vec!["16".into(), "32".into()]));
        let all = combinations(&[bs, nw]);
        assert_eq!(all.len(), 6);
        assert_eq!(
            all[1],
            vec![("bs".into(), "16".into()), ("workers".into(), "2".into())]
        );
        let cmd = args("python train.py --batch-size {bs} --num-workers={workers}");
        assert_eq!(
            substitute(&cmd, &all[5]).expect("sub"),
            args("python train.py --batch-size 32 --num-workers=4")
        );
        // A value is one argument, whatever it holds: no shell sees it.
        let odd = vec![("bs".to_owned(), "1; rm -rf ~".to_owned())];
        assert_eq!(
            substitute(&args("x {bs}"), &odd).expect("sub")[1],
            "1; rm -rf ~"
        );
        assert!(substitute(&args("python train.py"), &all[0]).is_err());
        for bad in ["bs", "=1", "b s=1", "bs=1,,2", "1x=2"] {
            assert!(parse_axis(bad).is_err(), "{bad}");
        }
        // Issue 39: batches are whole numbers from 1, and auto stands alone.
        for bad in [
            "batch=a,b",
            "batch=0",
            "batch=-1",
            "batch=99999999999",
            "batch=auto,4",
            "batch=1.5",
        ] {
            let e = parse_axis(bad).expect_err(bad).to_string();
            assert!(e.contains("batch"), "{bad}: {e}");
        }
        assert!(parse_axis("batch=auto").is_ok());
        assert!(parse_axis("batch=16,64").is_ok());
        let twice = parse_axes(&["batch=1".to_owned(), "batch=2".to_owned()]);
        assert!(twice
            .expect_err("twice")
            .to_string()
            .contains("given twice"));
        assert_eq!(
            parse_axes(&["batch=1".to_owned(), "lr=0.1".to_owned()])
                .expect("two")
                .len(),
            2
        );
        {}
        assert_eq!(combinations(&[]), vec![Vec::<(String, String)>::new()]);
    }
}
