"""The main window's File → Export: the folder it offers (the last one used, else the
pictures folder), the dialog, and the run that writes the files without stopping the window
(shell/export_run.py), whose end the status bar says. Mixed into the main window, which
provides ``controller``, ``prefs`` and ``statusBar()``.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QStandardPaths


class WindowExport:
    """``open_export_dialog()``, ``export_current(folder, ...)`` and ``export_run`` (the last
    ExportRun, or None)."""

    def _export_folder(self) -> Path:
        saved = self.prefs.value("export/folder", "", str) if self.prefs is not None else ""
        if saved:
            return Path(saved)
        pictures = QStandardPaths.writableLocation(
            QStandardPaths.StandardLocation.PicturesLocation) or str(Path.home())
        return Path(pictures) / "mha-explorer"

    def open_export_dialog(self) -> None:
        from mha_explorer.qt.shell.export_dialog import (
            ExportDialog,  # QtSvg loads on first export, not at start
        )

        dialog = ExportDialog(self._export_folder(), self)
        if dialog.exec() == ExportDialog.DialogCode.Accepted:
            self.export_current(dialog.folder(), options=dialog.options(),
                                all_stages=dialog.all_stages())
            if self.prefs is not None:
                self.prefs.set_value("export/folder", str(dialog.folder()))
        dialog.deleteLater()

    def export_current(self, folder, *, options=None, all_stages: bool = False):
        """Write the current stage (or every stage) and the tables into ``folder`` without
        stopping the window (shell/export_run.py); returns the ExportRun, whose end the status
        bar says (the files, or why not). A newer export replaces one still running."""
        from mha_explorer.qt.shell.export import ExportOptions
        from mha_explorer.qt.shell.export_run import ExportRun

        c = self.controller
        stages = c.plan.stage_ids if all_stages else (c.stage,)
        if self.export_run is not None and not self.export_run.done:
            self.export_run.cancel()
        run = ExportRun(c.jobs, c.config, c.current_trace, stages, folder, batch_index=c.batch_index,
                        head=c.head, options=options if options is not None else ExportOptions(), parent=self)
        self.export_run = run

        def said() -> None:
            if run.problem == "cancelled":
                self.statusBar().showMessage(f"export cancelled; {len(run.written)} files written to "
                                             f"{folder}", 10_000)
            elif run.problem is not None:
                self.statusBar().showMessage(f"export failed: {run.problem}", 10_000)
            else:
                self.statusBar().showMessage(f"exported {len(run.written)} files to {folder}", 10_000)

        run.ended.connect(said)
        run.start()
        return run
