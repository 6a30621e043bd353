"""Lessons: a lecturer's steps through the app, each a view, a short text and a question the live model answers.

format: a lesson file read into a Lesson, every mistake named with its line; check: its views against the loaded
models; library: which lessons there are and the one resolver of a lesson's name; answers: what the model computes
at a reveal. No Gradio here; the app's presenter and the classroom's store and routes sit above.
`toyviz lessons [FILE …]` checks lesson files before class.
"""
