


@highlight

Only a highlight survived the download
