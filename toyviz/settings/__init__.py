"""What a view of the app is, below the lessons, the classroom and the app that all speak it: every control's
default, choices and range (controls) and the deep-link grammar that writes a view into a URL and reads it
back (links). No Gradio, no plotly, no torch."""
